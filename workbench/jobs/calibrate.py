"""Job ``calibrate_host``: measure the ``host`` device profile (D.2), then check replay against
native timing on different windows (D.3). Writes ``conf/device/host.yaml`` and the raw samples."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from workbench.figures.paper import replay_error

from .base import ConfigError, JobResult
from .config import check_models, repeat_rule


def validate(cfg: DictConfig) -> None:
    check_models(cfg)
    reps = cfg.calibration.reps
    if not isinstance(reps, int) or reps < 5:
        raise ConfigError("calibration.reps", f"the protocol needs >= 5 measured repetitions, got {reps!r}")
    attempts = cfg.calibration.attempts
    if not isinstance(attempts, int) or attempts < 1:
        raise ConfigError("calibration.attempts", f"expected a whole number of calibrations >= 1, got {attempts!r}")
    if cfg.calibration.agreement:
        repeat_rule(cfg.calibration, "calibration", "agreement_reps", "agreement_max_reps")


def run(cfg: DictConfig, out: Path) -> JobResult:
    from workbench.native.agreement import replay_agreement
    from workbench.native.calibrate import calibrate_host
    from workbench.native.windows import demo_clip_windows, demo_windows
    from workbench.replay.profile import DEVICE_DIR

    c = cfg.calibration
    model = OmegaConf.to_container(cfg.model, resolve=True)
    calib, evals = demo_windows(float(c.max_seconds), model=model)  # under the target's own audio limit
    path = Path(c.profile_path or DEVICE_DIR / "host.yaml")
    profile, raw = calibrate_host(calib[: c.windows], model, c.reps, range(1, c.max_width + 1),
                                  out / "calibration", profile_path=path,
                                  clips=demo_clip_windows(int(c.clips), model=model), attempts=int(c.attempts))
    metrics = {"host.target_step_ms": profile.target_step_ms, "host.loop_residual_ms": profile.loop_residual_ms}
    if profile.calibration is not None:
        metrics |= {"host.calibration_spread": profile.calibration.spread,
                    "host.calibration_steady": float(profile.calibration.steady)}
    for k in profile.verifier.widths():
        metrics[f"host.verify_ms.K{k}"] = profile.verify_ms(k)
    tables = {"host_samples": raw}
    figures = {}
    summary = None
    if c.agreement:
        frame, summ = replay_agreement(calib, evals[: c.agreement_windows or len(evals)], model,
                                       repeat_rule(c, "calibration", "agreement_reps", "agreement_max_reps"),
                                       profile=profile)
        tables["agreement"] = frame
        metrics.update({f"agreement.{k}": float(v) for k, v in summ.items() if isinstance(v, int | float)})
        figures["replay_error"] = replay_error(frame)
        # tps_replay replays the median run (its error beside); signed_error_pct is the judged, interleaved one
        summary = frame.select("window_id", "tokens", "tps_native", "tps_replay", "median_run_signed_error_pct",
                               "signed_error_pct")
    return JobResult(metrics, tables, figures, summary, {"profile": str(path)})
