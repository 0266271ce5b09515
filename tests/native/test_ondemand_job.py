"""On-demand requests end to end (Section 5.4, D.6.1): the real ``python -m workbench.run
experiment=ondemand`` on a reduced request trace of real speech with the real Whisper pair, read
back from the real MLflow store. Prepared requests run no audio work inside the request; the
``ondemand.unprepared`` switch times the same requests with the encoder inside them, beside them.
No timing thresholds (the machine is shared)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
METHODS = ("target_only", "as2d")


@pytest.fixture(scope="module")
def requested(tmp_path_factory):
    d = tmp_path_factory.mktemp("ondemand")
    db = d / "mlflow.db"
    res = subprocess.run(
        [sys.executable, "-m", "workbench.run", "experiment=ondemand", "ondemand.duration_s=90",
         "ondemand.window_s=8", "ondemand.warmup=0", f"ondemand.methods=[{','.join(METHODS)}]",
         "ondemand.unprepared=true", "dataset.max_windows=4", f"tracking.uri=sqlite:///{db}",
         f"hydra.run.dir={d}/out"],
        cwd=ROOT, capture_output=True, text=True, timeout=1500)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    return f"sqlite:///{db}"


def test_prepared_requests_time_no_audio_work_and_stay_exact(requested) -> None:
    from workbench.figures.runs import latest_table

    frame, run = latest_table("as2d-ondemand", "requests", uri=requested)
    assert run.info.status == "FINISHED"
    assert frame.height == 2 * len(METHODS) * 2  # checkpoints 60 s and 90 s, both settings
    prepared, unprepared = frame.filter(pl.col("prepared")), frame.filter(~pl.col("prepared"))
    assert (prepared["residual_audio_s"] == 0).all() and (prepared["prepared_s"] > 0).all()
    assert (unprepared["residual_audio_s"] > 0).all() and (unprepared["prepared_s"] == 0).all()
    assert frame["exact"].all()  # every request's output equals target-only's at its checkpoint
    assert (frame["tokens"] > 0).all()
    pieces = ["residual_audio_s", "instruction_prefill_s", "handoff_s", "decode_s", "drain_s"]
    total = frame.select(pl.sum_horizontal(pieces)).to_series()
    assert ((total - frame["latency_s"]).abs() < 1e-9).all()  # the pieces add up to the measured L_u


def test_the_summary_and_the_latency_ratio(requested) -> None:
    import mlflow

    from workbench.figures.runs import latest_table

    summary, run = latest_table("as2d-ondemand", "ondemand_summary", uri=requested)
    assert set(zip(summary["method"], summary["prepared"], strict=True)) == {(m, p) for m in METHODS
                                                                            for p in (True, False)}
    metrics = mlflow.MlflowClient(tracking_uri=requested).get_run(run.info.run_id).data.metrics
    rows = {(r["method"], r["prepared"]): r for r in summary.iter_rows(named=True)}
    ratio = rows[("as2d", True)]["latency_p50"] / rows[("target_only", True)]["latency_p50"]
    assert metrics["ondemand.as2d.latency_p50_ratio"] == pytest.approx(ratio)
    assert metrics["ondemand.as2d.unprepared.latency_p50"] == pytest.approx(rows[("as2d", False)]["latency_p50"])
