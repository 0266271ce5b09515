"""The D.3 decomposition on a phone's records (``workbench.native.decomposition``, term by term).

A phone run's lines carry what the host's native runs carry: every call's start, end and width
(``round`` lines) and the producer's publication times (``publication`` lines). So each As²d window's
median repetition becomes a ``NativeResult`` and the host's ``decompose`` splits its signed error into
the same terms: the producer's publication curve, readiness, the verifier's cost beside the producer
and alone, loop work and drain. The phone lines do not say when the producer stopped, so a call is
taken as beside the producer until the target's EOS (``NativeResult.producer_end``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from workbench.native.decomposition import DECOMPOSITION_COLUMNS, TERMS, decompose
from workbench.native.driver import NativeResult

# the host agreement's column names (``workbench.native.agreement``), so one report prints both
DECOMPOSITION_SCHEMA: dict[str, Any] = {
    "config": pl.Utf8, "window_id": pl.Utf8, "signed_error_pct": pl.Float64, "abs_error_pct": pl.Float64,
    **{f"d_{c}": pl.Int64 if c.startswith("calls") or c.startswith("concurrent") else pl.Float64
       for c in DECOMPOSITION_COLUMNS if c not in ("window_id", "signed_error_pct")}}


def median_time_repetition(fr: Mapping[str, pl.DataFrame], window_id: str) -> int:
    """The repetition whose time is the window's median (the one D.3 sets beside its replay; not
    ``workbench.native.window_anchoring.median_repetition``, which picks the median replay's probes)."""
    runs = fr["windows"].filter(pl.col("window_id") == window_id).sort("time")
    if not runs.height:
        raise ValueError(f"window {window_id!r} is missing from the run's records")
    return int(runs["repetition"][runs.height // 2])


def phone_native_run(fr: Mapping[str, pl.DataFrame], window_id: str, repetition: int) -> NativeResult:
    """One window repetition of a phone run as the host's ``NativeResult``: its rounds (timed on the
    phone's clock), its time and EOS, and the producer's stream with each token's publication time."""
    from phone_runner.records import round_record

    def one(kind: str) -> pl.DataFrame:
        f = fr[kind]
        if not f.height:
            return f
        return f.filter((pl.col("window_id") == window_id) & (pl.col("repetition") == repetition))

    w = one("windows").row(0, named=True)
    records = tuple(round_record(r) for r in one("rounds").sort("round").iter_rows(named=True))
    tokens: list[int] = []
    times: list[float] = []
    pubs = one("publications")
    if pubs.height:
        pubs = pubs.sort("offset")
        for batch, t in zip(pubs["tokens"], pubs["publish_time"], strict=True):
            tokens += [int(x) for x in batch]
            times += [float(t)] * len(batch)
    return NativeResult(window_id, str(w.get("scheme") or (records[0].scheme if records else "")),
                        tuple(int(x) for x in w["output"]), records, (), float(w["time"]), float(w["t_eos"]),
                        producer_tokens=tuple(tokens), producer_times=tuple(times))


def decomposition_rows(fr: Mapping[str, pl.DataFrame], windows: Mapping[str, Any], ids: Sequence[str], rc: Any,
                       profiles: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per window of a decoupled configuration ``rc``: its median repetition's D.3 terms under the
    window's judged profile (``profiles``; ``windows``: the replay windows built from the run's own
    published stream)."""
    rows = []
    for wid in ids:
        run = phone_native_run(fr, wid, median_time_repetition(fr, wid))
        d = decompose(windows[wid], run, profiles[wid], rc.source, rc.settings)
        rows.append({"config": rc.label, "window_id": wid, "signed_error_pct": d["signed_error_pct"],
                     "abs_error_pct": abs(d["signed_error_pct"]),
                     **{f"d_{c}": d[c] for c in DECOMPOSITION_COLUMNS if c not in ("window_id", "signed_error_pct")}})
    return rows


__all__ = ["DECOMPOSITION_SCHEMA", "TERMS", "decomposition_rows", "median_time_repetition", "phone_native_run"]
