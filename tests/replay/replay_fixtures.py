"""Shared builders: a constant-cost test profile and hand-made windows with known answers."""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.replay.profile import DeviceProfile, parse_profile
from workbench.replay.trajectory import DraftTable, SourceTrack, Window

EOS = 0


def num(v: float) -> dict[str, Any]:
    return {"v": v, "source": "test constant"}


def constant_profile(*, forward_ms: float = 10.0, conc: float = 1.5, align_ms: float = 1.0,
                     queue_ms: float = 2.0, producer_factor: float = 1.0, max_k: int = 25,
                     publication_ms: float = 0.0, startup_ms: float = 0.0) -> DeviceProfile:
    """Step 50 ms; verifier V(K) = 40 + 10 K ms idle, ``conc`` x that while the producer runs."""
    raw = {
        "schema": "device-profile/1", "name": "constant", "device": "test", "rules": {},
        "target_step_ms": num(50.0), "loop_residual_ms": num(5.0), "queue_ms": num(queue_ms),
        "alignment_ms": num(align_ms),
        "verifier": {"idle_ms": {k: num(40.0 + 10.0 * k) for k in range(1, max_k + 1)},
                     "concurrent": {"factor": num(conc), "missing": "error"}},
        "sources": {"qwen": {"kind": "autoregressive", "forward_ms": num(forward_ms),
                             "publication_ms": num(publication_ms), "startup_ms": num(startup_ms),
                             "concurrent_factor": num(producer_factor), "batch_tokens": num(8),
                             "confidence": True}},
        "serial_drafter": "qwen",
        "asp": {"paired_branch_ms": num(15.0), "prob_row_ms": num(1.0),
                "kv_refresh_ms": {k: num(5.0 + k) for k in range(1, 26)}},
    }
    return parse_profile(raw, file="constant.yaml")


def exact_window(n: int, *, producer: list[int] | None = None, window_id: str = "w0") -> Window:
    """Reference ``10, 11, ...`` (distinct tokens) then EOS; drafter and producer exact by default."""
    ref = [*range(10, 10 + n - 1), EOS]
    ext = ref + [999] * 24
    drafts = np.array([ext[c : c + 24] for c in range(1, n)], dtype=np.int64)
    table = DraftTable(drafts, np.full(drafts.shape, 0.9), np.full(n - 1, 24, dtype=np.int64))
    stream = ref if producer is None else producer
    track = SourceTrack("qwen", tuple(stream), (0.9,) * len(stream), (1,) * len(stream))
    return Window(window_id, "test", tuple(ref), EOS, 1000, 1024, table, {"qwen": track}).validate()
