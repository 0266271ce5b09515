"""Replay a grid of configurations over many windows, optionally across processes (D.4.3).

The full oracle catalog is every window x eligible source x budget 1-24. Each (window, source)
producer plan is built once and shared by its 24 budgets. Workers are forked processes that
inherit the windows, so nothing is pickled to disk and the results come back as plain rows.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import cast

import polars as pl

from workbench.decoding import DECOUPLED

from .engine import producer_plan, replay
from .multi_source import MultiPlan
from .producer import ProducerPlan
from .profile import DeviceProfile
from .result import ReplayConfig
from .trajectory import Window

CATALOG_SCHEMA = {"window_id": pl.Utf8, "dataset": pl.Utf8, "profile": pl.Utf8, "config": pl.Utf8,
                  "scheme": pl.Utf8, "source": pl.Utf8, "budget": pl.Int64, "tokens": pl.Int64,
                  "time": pl.Float64, "rounds": pl.Int64}

_JOB: tuple[Sequence[Window], Sequence[ReplayConfig], DeviceProfile, bool] | None = None


def as2d_catalog(sources: Sequence[str], budgets: Sequence[int] = range(1, 25), scheme: str = "as2d",
                 **settings: object) -> list[ReplayConfig]:
    """The oracle's search space: As²d with every source and fixed budget (``scheme`` and ``settings``: an
    As²d variant with a fixed budget, e.g. ``as2d_guarded``, for an oracle over that variant's catalog)."""
    return [ReplayConfig(scheme, source=s, budget=b, **settings) for s in sources for b in budgets]


def _replay_windows(windows: Sequence[Window], configs: Sequence[ReplayConfig], profile: DeviceProfile,
                    audit: bool) -> list[tuple]:
    rows: list[tuple] = []
    for w in windows:
        plans: dict[str, ProducerPlan | MultiPlan] = {}
        for cfg in configs:
            plan = None
            if cfg.scheme in DECOUPLED:
                source = cast(str, cfg.source)  # a decoupled configuration names its source
                track = w.sources.get(source)
                if track is None or not track.eligible:
                    continue  # language-ineligible sources stay masked (D.4.3)
                plan = plans.get(source)
                if plan is None:
                    plan = plans[source] = producer_plan(w, source, profile)
            r = replay(w, cfg, profile, plan=plan, audit=audit)
            s = r.summary()
            rows.append(tuple(s[k] for k in CATALOG_SCHEMA))
    return rows


def _die_with_parent(parent_pid: int) -> None:
    """Pool initializer: the kernel SIGKILLs this worker when the process that forked it dies (Linux
    ``PR_SET_PDEATHSIG``). A job killed mid-catalog (its sweep's parent got ``kill -9``) used to leave
    forked workers blocked on the call queue, holding the resource trackers' pipes open forever."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the parent's own exit path shuts the pool down
        return
    if os.getppid() != parent_pid:  # the parent died between fork and prctl
        os._exit(1)


def _worker(bounds: tuple[int, int]) -> list[tuple]:
    assert _JOB is not None
    windows, configs, profile, audit = _JOB
    return _replay_windows(windows[bounds[0]:bounds[1]], configs, profile, audit)


def run_catalog(windows: Sequence[Window], configs: Sequence[ReplayConfig], profile: DeviceProfile,
                workers: int | None = 1, audit: bool = True, chunk: int = 8) -> pl.DataFrame:
    """One row per (window, configuration) that is eligible; columns ``CATALOG_SCHEMA``."""
    global _JOB
    workers = os.cpu_count() or 1 if workers is None else workers
    if workers <= 1 or len(windows) <= chunk:
        rows = _replay_windows(windows, configs, profile, audit)
    else:
        _JOB = (windows, configs, profile, audit)
        try:
            bounds = [(i, min(i + chunk, len(windows))) for i in range(0, len(windows), chunk)]
            ctx = mp.get_context("fork")
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_die_with_parent,
                                     initargs=(os.getpid(),)) as pool:
                rows = [row for part in pool.map(_worker, bounds) for row in part]
        finally:
            _JOB = None
    return pl.DataFrame(rows, schema=CATALOG_SCHEMA, orient="row")
