"""Replay-vs-phone agreement under ``device`` (D.3), one configuration at a time.

Each window's native time is the median of its repetitions on the phone; the verdict is the signed
error of its replay under the calibrated device profile, ``100 (replay tps / native tps - 1)``, beside
what the median's own spread allows (``noise_floor_pct``, ``workbench.native.noise_floor``). Where the
device's speed moved since calibration (``phone_probe``), each window is also replayed under the
profile scaled to the configuration's own anchors (``anchored_error_pct``), to the bracketed target
probes (``probe_anchored_error_pct``) and to each core's own probe (``producer_anchored_error_pct``):
diagnoses reported beside the verdict, never in it.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from .phone_probe import DriftProbe, window_times

AGREEMENT_SCHEMA = {"config": pl.Utf8, "window_id": pl.Utf8, "tokens": pl.Int64, "time_native": pl.Float64,
                    "time_replay": pl.Float64, "signed_error_pct": pl.Float64, "noise_floor_pct": pl.Float64,
                    "drift_ratio": pl.Float64, "drift_ratio_probe": pl.Float64, "drift_ratio_before": pl.Float64,
                    "drift_ratio_after": pl.Float64,
                    "drift_ratio_producer": pl.Float64,
                    "time_replay_anchored": pl.Float64, "anchored_error_pct": pl.Float64,
                    "probe_anchored_error_pct": pl.Float64,
                    "producer_anchored_error_pct": pl.Float64}

# the per-configuration summary columns that also become ``phone.<method>.<column>`` metrics (where finite)
SUMMARY_METRICS = ("tps", "acceptance", "coverage", "readiness", "agreement_mae_pct", "agreement_noise_floor_pct",
                   "agreement_anchored_mae_pct", "agreement_probe_anchored_mae_pct",
                   "agreement_producer_anchored_mae_pct", "drift_ratio", "drift_ratio_probe", "drift_ratio_producer")


@dataclass(frozen=True)
class JudgedProfiles:
    """The profiles one configuration's windows are replayed under: the calibrated ``device`` profile
    (the verdict) and the drift-scaled ones reported beside it (``workbench.replay.drift``)."""

    device: Any  # the profile as calibrated: the D.3 verdict
    own: dict[str, Any]  # per window: scaled by the configuration's own anchors around it (empty: no anchor)
    probe: Any | None  # scaled to the target probes' speed over the configuration's bracket
    each_core: Any | None  # the target and the producer each at its own core's probed speed

    @classmethod
    def around(cls, profile: Any, ratios: Mapping[str, float], probe: DriftProbe | None) -> JudgedProfiles:
        """``ratios``: per window, the configuration's own-anchor drift (``own_anchor_ratios``)."""
        from workbench.replay.drift import scaled

        return cls(profile, {wid: scaled(profile, r) for wid, r in ratios.items()},
                   probe.target(profile) if probe else None, probe.each_core(profile) if probe else None)


@dataclass(frozen=True)
class WindowAgreement:
    """One row of the ``agreement`` table (``AGREEMENT_SCHEMA``, same names and order): a window's
    native median beside its replays. ``None``: that profile was not available for this run."""

    config: str
    window_id: str
    tokens: int
    time_native: float
    time_replay: float
    signed_error_pct: float
    noise_floor_pct: float
    drift_ratio: float | None
    drift_ratio_probe: float | None
    drift_ratio_before: float | None
    drift_ratio_after: float | None
    drift_ratio_producer: float | None
    time_replay_anchored: float | None
    anchored_error_pct: float | None
    probe_anchored_error_pct: float | None
    producer_anchored_error_pct: float | None

    def row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _error_pct(replay_tps: float, native_tps: float) -> float:
    """D.3's signed error: > 0 where replay is faster than the phone."""
    return 100 * (replay_tps / native_tps - 1)


def window_agreement(fr: dict[str, pl.DataFrame], window: Any, window_id: str, rc: Any,
                     profiles: JudgedProfiles, ratio: float | None, probe: DriftProbe | None) -> WindowAgreement:
    """One window of a configuration's run (``fr``: its frames, the anchor copies removed; ``window``:
    its replay ``Window``) at its median repetition, replayed under each of ``profiles``."""
    from workbench.native.noise_floor import median_noise_pct
    from workbench.replay.engine import replay

    times = window_times(fr, window_id)
    native = times[len(times) // 2]
    native_tps = window.n_tokens / native
    replayed = replay(window, rc, profiles.device)
    floor = median_noise_pct(times, key=window_id)  # what the median's own spread allows
    again = replay(window, rc, profiles.own[window_id]) if profiles.own else None
    probed = replay(window, rc, profiles.probe) if profiles.probe else None
    both = replay(window, rc, profiles.each_core) if profiles.each_core else None
    return WindowAgreement(
        config=rc.label, window_id=window_id, tokens=window.n_tokens, time_native=native,
        time_replay=replayed.time, signed_error_pct=_error_pct(replayed.tps, native_tps), noise_floor_pct=floor,
        drift_ratio=ratio,
        drift_ratio_probe=probe.ratio if probe else None,
        drift_ratio_before=probe.before if probe else None,
        drift_ratio_after=probe.after if probe else None,
        drift_ratio_producer=probe.producer_ratio if probe else None,
        time_replay_anchored=again.time if again else None,
        anchored_error_pct=_error_pct(again.tps, native_tps) if again else None,
        probe_anchored_error_pct=_error_pct(probed.tps, native_tps) if probed else None,
        producer_anchored_error_pct=_error_pct(both.tps, native_tps) if both else None)


def config_agreement(fr: dict[str, pl.DataFrame], windows: Mapping[str, Any], ids: Sequence[str], rc: Any,
                     profiles: JudgedProfiles, ratios: Mapping[str, float],
                     probe: DriftProbe | None) -> list[WindowAgreement]:
    """Every window of ``ids`` (request order) of one configuration: replay vs the phone (D.3)."""
    return [window_agreement(fr, windows[wid], wid, rc, profiles, ratios.get(wid), probe) for wid in ids]


def _mean_abs(errors: Sequence[float]) -> float:
    """The mean absolute error; NaN where no window had that profile."""
    return statistics.fmean(abs(e) for e in errors) if errors else math.nan


def _present(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def summary_row(device_model: str, clock: Any, rc: Any, fr: dict[str, pl.DataFrame],
                agreement: Sequence[WindowAgreement], ratio: float | None, probe: DriftProbe | None,
                flagged: int) -> dict[str, Any]:
    """One configuration's ``summary`` row: its pooled decode metrics on the phone and its windows'
    agreement (D.3): mean absolute and signed error, the mean finite noise floor, and the drift ratios.
    ``ratio``: the geometric mean of its own anchors' ratios (``None``: no anchor)."""
    from workbench import metrics as M

    errs = [a.signed_error_pct for a in agreement]
    known = [a.noise_floor_pct for a in agreement if math.isfinite(a.noise_floor_pct)]
    return {"device": device_model, "method": rc.label, "clock": clock,
            "tps": M.tps_pooled(fr["windows"]), "acceptance": M.acceptance(fr["rounds"]),
            "coverage": M.coverage(fr["rounds"]), "readiness": M.readiness(fr["rounds"]),
            "agreement_mae_pct": statistics.fmean(abs(e) for e in errs),
            "agreement_signed_pct": statistics.fmean(errs),
            "agreement_noise_floor_pct": statistics.fmean(known) if known else math.nan,
            "agreement_anchored_mae_pct": _mean_abs(_present(a.anchored_error_pct for a in agreement)),
            "agreement_probe_anchored_mae_pct": _mean_abs(_present(a.probe_anchored_error_pct for a in agreement)),
            "agreement_producer_anchored_mae_pct": _mean_abs(
                _present(a.producer_anchored_error_pct for a in agreement)),
            "drift_ratio": ratio if ratio else math.nan,
            "drift_ratio_probe": probe.ratio if probe else math.nan,
            "drift_ratio_producer": probe.producer_ratio if probe and probe.producer_ratio else math.nan,
            "flagged": flagged}


def job_metrics(rows: Sequence[Mapping[str, Any]], *, flagged: int, resumed: int, windows: int) -> dict[str, float]:
    """The job's MLflow metrics: its counts, then each summary row's finite ``SUMMARY_METRICS`` as
    ``phone.<method>.<column>``. Exactness mismatches are 0 by construction: a mismatch raises (C.4)."""
    metrics: dict[str, float] = {"exactness_mismatches": 0.0, "flagged_windows": float(flagged),
                                 "resumed_windows": float(resumed), "windows": float(windows)}
    for r in rows:
        for k in SUMMARY_METRICS:
            if isinstance(r[k], float) and math.isfinite(r[k]):
                metrics[f"phone.{r['method']}.{k}"] = r[k]
    return metrics


def agreement_table(agreement: Iterable[WindowAgreement]) -> pl.DataFrame:
    return pl.DataFrame([a.row() for a in agreement], schema=AGREEMENT_SCHEMA)


__all__ = ["AGREEMENT_SCHEMA", "SUMMARY_METRICS", "JudgedProfiles", "WindowAgreement", "agreement_table",
           "config_agreement", "job_metrics", "summary_row", "window_agreement"]
