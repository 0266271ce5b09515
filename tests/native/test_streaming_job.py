"""The short stream end to end: the real ``python -m workbench.run experiment=streaming`` on real
speech (the reduced demo corpus) and the real Whisper pair, read back from the real MLflow store.

24 s of audio (6 blocks of 4 s, context resets every 12 s) arrive in real time. Checked: every block
is processed once, in arrival order, after it arrived and after the previous one finished; the
lag identity per block; the summary and its MLflow metrics. No timing thresholds (the machine is shared).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
DURATION, BLOCK, RESET = 24, 4.0, 12.0


@pytest.fixture(scope="module")
def streamed(tmp_path_factory):
    d = tmp_path_factory.mktemp("stream")
    db = d / "mlflow.db"
    res = subprocess.run(
        [sys.executable, "-m", "workbench.run", "experiment=streaming", f"duration_s={DURATION}",
         "dataset.max_windows=4", f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={d}/out"],
        cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    return f"sqlite:///{db}", res


def test_the_stream_loses_and_reorders_no_block(streamed) -> None:
    from workbench.figures.runs import latest_table

    uri, _ = streamed
    blocks, run = latest_table("as2d-streaming", "blocks", uri=uri)
    n = int(DURATION // BLOCK)
    assert blocks["block"].to_list() == list(range(n))  # each block once, in order
    assert blocks["start_s"].to_list() == [i * BLOCK for i in range(n)]
    assert blocks["context_s"].to_list() == [BLOCK * (1 + i % int(RESET // BLOCK)) for i in range(n)]
    rows = blocks.to_dicts()
    for prev, r in zip([None, *rows], rows, strict=False):
        assert r["arrival"] >= r["end_s"] - 1e-6  # released only once its last sample was "captured"
        assert r["begin"] >= r["arrival"] and r["finish"] >= r["begin"]
        assert r["lag_s"] == pytest.approx(r["queue_wait_s"] + r["processing_s"], abs=1e-9)
        if prev is not None:  # one worker, FIFO: a block starts after the previous one finished
            assert r["arrival"] >= prev["arrival"] and r["begin"] >= prev["finish"]
    assert (blocks["tokens"] > 0).all()  # real speech in every block: the pair transcribed something
    assert run.info.status == "FINISHED"


def test_the_summary_and_its_mlflow_metrics(streamed) -> None:
    import mlflow

    from workbench.figures.runs import latest_table

    uri, res = streamed
    summary, run = latest_table("as2d-streaming", "streaming_summary", uri=uri)
    blocks, _ = latest_table("as2d-streaming", "blocks", uri=uri)
    metrics = mlflow.MlflowClient(tracking_uri=uri).get_run(run.info.run_id).data.metrics
    for key in ("blocks", "audio_s", "active_rtf", "resource_rtf", "p95_lag_s", "decode_tps", "max_queue_wait_s",
                "mean_prefill_s", "undrafted_blocks"):
        assert f"streaming.{key}" in metrics, key
        assert metrics[f"streaming.{key}"] == pytest.approx(summary[key][0]), key
    assert metrics["streaming.blocks"] == blocks.height and metrics["streaming.audio_s"] == DURATION
    assert metrics["streaming.active_rtf"] == pytest.approx(blocks["processing_s"].sum() / DURATION)
    assert metrics["streaming.max_queue_wait_s"] == pytest.approx(blocks["queue_wait_s"].max())
    assert summary["method"][0] == "as2d"
