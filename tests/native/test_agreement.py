"""Replay vs native agreement (D.3) end to end on tiny real Whisper models."""

from __future__ import annotations

import math

from tests.native.test_calibrate import host_cfg, windows  # noqa: F401  (fixtures)
from tests.native.test_native import audio, producer_dir, tiny_dir  # noqa: F401  (fixtures)
from workbench.native.agreement import AGREEMENT_COLUMNS, replay_agreement


def test_agreement_reports_per_window_errors(host_cfg, windows, tmp_path):  # noqa: F811
    frame, summary = replay_agreement(windows[:1], windows[1:], host_cfg, reps=1, warmup=0, calib_reps=1,
                                      widths=range(1, 5), out_dir=tmp_path, progress=False)
    assert tuple(frame.columns) == AGREEMENT_COLUMNS and frame.height == 1
    row = frame.row(0, named=True)
    assert row["window_id"] == "eval" and row["matched"]
    assert math.isclose(row["signed_error_pct"], 100 * (row["tps_replay"] / row["tps_native"] - 1))
    assert summary["windows"] == 1 and math.isclose(summary["mae_pct"], abs(row["signed_error_pct"]))
    assert (tmp_path / "agreement.parquet").exists() and (tmp_path / "host.yaml").exists()
