"""The front door on a dataset layout: ``python -m workbench.run experiment=replay dataset=librispeech
dataset.root=<fixture>`` collects traces with the offline Whisper pair, replays them and logs a
finished MLflow run whose windows are the fixture's cohort; a wrong root is one line, exit 2.

One window keeps trace collection short (one ~3 s clip through Whisper base + tiny.en); the keyed
trace cache under ``AS2D_CACHE`` makes a rerun skip the models.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mlflow
import polars as pl

from tests.data import dataset_fixtures as fx

ROOT = Path(__file__).resolve().parents[2]
ONE_WINDOW = ["dataset.window.mode=utterance", "dataset.cohort.splits.test=1", "dataset.cohort.splits.dev=1",
              "dataset.cohort.splits.validation=0", "dataset.cohort.splits.calibration=0"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench.run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)


def test_wrong_root_is_one_line(tmp_path: Path) -> None:
    res = run_cli("experiment=replay", "dataset=librispeech", f"dataset.root={tmp_path / 'nope'}",
                  f"tracking.uri=sqlite:///{tmp_path}/m.db", f"hydra.run.dir={tmp_path}/out")
    assert res.returncode == 2, res.stderr[-2000:]
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("config error:")]
    assert len(lines) == 1 and "Traceback" not in res.stderr
    assert f"dataset.root={tmp_path / 'nope'}: no such directory; librispeech expects LibriSpeech/" in lines[0]
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/m.db")  # checked in validate: no run was started
    assert not (tmp_path / "m.db").exists() or mlflow.search_runs(search_all_experiments=True,
                                                                 output_format="list") == []


def test_replay_on_librispeech_layout(tmp_path: Path, speech: fx.Speech) -> None:
    root = fx.librispeech(tmp_path / "data", speech)
    db, out = tmp_path / "m.db", tmp_path / "out"
    res = run_cli("experiment=replay", "dataset=librispeech", f"dataset.root={root}", *ONE_WINDOW,
                  f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={out}", f"out_dir={out}")
    assert res.returncode == 0, res.stderr[-3000:]
    windows = pl.read_parquet(out / "tables" / "windows.parquet")
    ids = set(windows["window_id"])
    assert len(ids) == 1 and set(windows["dataset"]) == {"librispeech"}
    (wid,) = ids
    assert wid in {"librispeech-1089-134686-0000", "librispeech-1089-134686-0001", "librispeech-121-121726-0000"}
    assert set(windows["method"]) == {"target_only", "sd", "asp", "as2d"}
    # every method committed the same number of target tokens on the window (exactness is audited in replay)
    assert windows.group_by("method").agg(pl.col("tokens").first())["tokens"].n_unique() == 1
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    (run,) = mlflow.search_runs(search_all_experiments=True, output_format="list",
                                filter_string="tags.`as2d.role` = 'job'")  # not its per-config children
    assert run.info.status == "FINISHED" and run.data.metrics["exactness_mismatches"] == 0.0
    assert run.data.params.get("dataset.name") == "librispeech"
    # the cohort manifest names the run's window (test) and the disjoint dev window, and is logged
    cohort = pl.read_parquet(out / "tables" / "cohort.parquet")
    assert cohort.select("split", "window_id").rows()[0] == ("test", wid)
    assert cohort["split"].to_list() == ["test", "dev"] and cohort["window_id"].n_unique() == 2
    logged = [a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id, "tables")]
    assert "tables/cohort.parquet" in logged and "tables/quality.parquet" in logged
    # task quality of the target's output beside speed: Whisper base reads piper speech almost perfectly
    quality = pl.read_parquet(out / "tables" / "quality.parquet").row(0, named=True)
    assert quality["window_id"] == wid and quality["output"]
    assert 0.0 <= run.data.metrics["quality.wer"] <= 0.5 and run.data.metrics["quality.cer"] <= 0.5
    assert quality["score"] == run.data.metrics["quality.wer"]  # one window: per-window WER is the pooled WER
