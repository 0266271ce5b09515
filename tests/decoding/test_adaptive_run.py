"""Adaptive As²d methods through the front door: conf/method files, Hydra composition, the replay job, MLflow."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mlflow
import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from workbench.jobs import replay as replay_job
from workbench.jobs.config import devices, methods
from workbench.jobs.evaluate import evaluate
from workbench.jobs.windows import load_windows

ROOT = Path(__file__).resolve().parents[2]
SEVERAL = {"as2d_sources", "as2d_adaptive"}  # choose among resident sources per round
NEW = ["as2d_online", "as2d_subst", "as2d_hybrid", "as2d_sources", "as2d_adaptive"]


@pytest.mark.parametrize("method", NEW)
def test_each_method_file_composes_and_replays_through_the_job(method):
    source = "producer+chunk" if method in SEVERAL else "producer"
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        cfg = compose("config", overrides=[f"method={method}", f"source={source}", "dataset.n_windows=3",
                                           "device=xiaomi_14", "model.budget=5"])
    replay_job.validate(cfg)
    frames = evaluate(load_windows(cfg), methods(cfg), devices(cfg), cfg, cfg.source, keep_rounds=False)
    w = frames["windows"]
    assert w["method"].unique().to_list() == [method]
    # Trace roles become the profile's sources (qwen = the producer, parakeet = the chunk source), and the
    # budget is the model pair's.
    expected = "qwen+parakeet" if method in SEVERAL else "qwen"
    assert w["config"].unique().to_list() == [f"{method}/{expected}/b5"]


def test_adaptive_as2d_runs_from_the_command_line_and_logs_an_exact_run(tmp_path):
    db = tmp_path / "m.db"
    res = subprocess.run(
        [sys.executable, "-m", "workbench.run", "method=as2d_adaptive", "methods=[target_only,as2d_adaptive]",
         "source=producer+chunk", "device=xiaomi_14", "dataset.n_windows=4", f"tracking.uri=sqlite:///{db}",
         f"hydra.run.dir={tmp_path}/out"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    (run,) = [r for r in mlflow.search_runs(search_all_experiments=True, output_format="list")
              if r.data.tags.get("as2d.role") not in ("config", "selection")]
    assert run.info.status == "FINISHED"
    # per-configuration metrics live on the child runs; the job's full set is its metrics.json artifact
    full = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="metrics.json",
                                                               dst_path=str(tmp_path / "m"))).read_text())
    assert run.data.metrics["exactness_mismatches"] == 0 and full["xiaomi_14.as2d_adaptive.tps"] > 0
    path = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="tables/windows.parquet",
                                               dst_path=str(tmp_path / "dl"))
    wins = pl.read_parquet(path)
    # Every window commits as many tokens as target-only (the audit checks them token for token).
    by = wins.pivot(on="method", index="window_id", values="tokens")
    assert by.height == 4 and by["as2d_adaptive"].to_list() == by["target_only"].to_list()
    assert wins.filter(pl.col("method") == "as2d_adaptive")["config"].unique().to_list() == [
        "as2d_adaptive/qwen+parakeet/b3"]
