"""Collect traces for windows: target reference, producer trajectories, drafter ranks, ASP drafts.

Resumable: a window whose manifest exists is not redone. Timing is measured per token on this
machine; the manifest records the machine and thread count so replay can tell where it came from.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from workbench.decoding.protocols import Drafter, Target
from workbench.models.drafting import ProducedToken
from workbench.traces.schema import is_done, rows_to_frame, write_window


@dataclass
class WindowJob:
    """Factories for one window's backends (built lazily, so finished windows cost nothing)."""

    window_id: str
    target: Callable[[], Target]
    producers: dict[str, Callable[[], Iterable[ProducedToken]]] = field(default_factory=dict)
    drafter: Callable[[], Drafter] | None = None  # prefix-conditioned, shared vocabulary
    ranks: Callable[[Sequence[int]], list[int]] | None = None  # drafter ranks along the reference
    manifest: dict[str, Any] = field(default_factory=dict)  # e.g. cache key + audio hash (traces.cache)


def greedy_reference(target: Target, cap: int) -> list[int]:
    out = [target.prefill()]
    while out[-1] != target.eos_id and len(out) < cap:
        out.append(target.verify(out[-1], [])[0])
        target.keep(0)
    return out


def _producer_rows(source_id: str, items: Iterable[ProducedToken], batch_size: int) -> list[dict[str, Any]]:
    rows, t0 = [], time.perf_counter()
    producer = items
    for i, p in enumerate(items):
        rows.append(dict(kind="producer", source_id=source_id, position=i, token=p.token,
                         confidence=p.confidence, t_generated=p.t_generated - t0, batch=i // batch_size,
                         forwards=getattr(producer, "forwards", None)))
    return rows


def collect_window(job: WindowJob, cap: int = 224, asp_cap: int = 24, batch_size: int = 8) -> tuple[list, dict]:
    t0 = time.perf_counter()
    target = job.target()
    ref = greedy_reference(target, cap)
    timings = {"reference_s": time.perf_counter() - t0}
    rows: list[dict[str, Any]] = [dict(kind="reference", source_id="target", position=i, token=t)
                                  for i, t in enumerate(ref)]
    for sid, make in job.producers.items():
        t = time.perf_counter()
        rows += _producer_rows(sid, make(), batch_size)
        timings[f"producer_{sid}_s"] = time.perf_counter() - t
    if job.ranks is not None:
        rows += [dict(kind="rank", source_id="drafter", position=i + 1, token=ref[i + 1], rank=r)
                 for i, r in enumerate(job.ranks(ref))]
    if job.drafter is not None:
        t = time.perf_counter()
        d = job.drafter()
        for c in range(1, len(ref)):
            if ref[c - 1] == target.eos_id:  # nothing follows EOS
                break
            p = d.propose(ref[:c], asp_cap)
            rows += [dict(kind="asp", source_id="drafter", prefix_len=c, position=j, token=tok,
                          confidence=None if p.confidences is None else p.confidences[j], forwards=p.forwards)
                     for j, tok in enumerate(p.tokens)]
        timings["asp_s"] = time.perf_counter() - t
    return rows, timings


def machine_info() -> dict[str, Any]:
    import torch

    return {"machine": platform.node(), "platform": platform.platform(), "processor": platform.processor(),
            "torch_threads": torch.get_num_threads(), "torch": torch.__version__}


def collect(jobs: Sequence[WindowJob], out_dir: str | Path, cap: int = 224, asp_cap: int = 24) -> list[str]:
    """Collect every unfinished window into ``out_dir``; returns the ids collected this call."""
    out_dir, done = Path(out_dir), []
    info = machine_info()
    for job in tqdm(jobs, desc="traces", unit="window"):
        if is_done(out_dir, job.window_id):
            continue
        rows, timings = collect_window(job, cap, asp_cap)
        write_window(out_dir, job.window_id, rows_to_frame(rows),
                     {**info, "timings": timings, "cap": cap, "asp_cap": asp_cap, **job.manifest})
        done.append(job.window_id)
    return done
