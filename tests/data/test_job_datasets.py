"""No override is silently ignored: native_host runs on the dataset it is given, and a job refuses
an override of a config group it does not read (one line, rc 2, no run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mlflow
import pytest
from hydra import compose, initialize_config_dir

from tests.data import dataset_fixtures as fx

ROOT = Path(__file__).resolve().parents[2]
COHORT = ["dataset.cohort.splits.test=2", "dataset.cohort.splits.dev=1", "dataset.cohort.splits.validation=0",
          "dataset.cohort.splits.calibration=0", "dataset.window.mode=utterance"]
LAYOUT_IDS = {"librispeech-1089-134686-0000", "librispeech-1089-134686-0001", "librispeech-121-121726-0000"}


def _cfg(*overrides: str):
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def test_native_host_windows_come_from_the_given_layout(tmp_path, speech, monkeypatch):
    from workbench.jobs.native import host_windows, validate

    monkeypatch.setenv("AS2D_CACHE", str(tmp_path / "cache"))  # the materialized windows of this layout only
    root = fx.librispeech(tmp_path / "data", speech)
    cfg = _cfg("experiment=native_host", "dataset=librispeech", f"dataset.root={root}", *COHORT)
    validate(cfg)
    windows = host_windows(cfg)
    clips = [c for w in windows for c in w.clip_ids]
    assert len(clips) == 2 and set(clips) <= LAYOUT_IDS  # the cohort's test split, not the demo's clips
    layout_seconds = sorted(round(speech.seconds(i), 2) for i in range(3))
    assert all(round(w.seconds, 2) in layout_seconds for w in windows if len(w.clip_ids) == 1)


def test_native_host_on_the_demo_keeps_the_demo_test_split():
    from workbench.data.corpus import split
    from workbench.jobs.demo_traces import demo_corpus
    from workbench.jobs.native import host_windows

    cfg = _cfg("experiment=native_host", "native.max_seconds=8")
    dev, _ = split(demo_corpus(cfg), float(cfg.dataset.dev_fraction), int(cfg.dataset.seed))
    clips = {c for w in host_windows(cfg) for c in w.clip_ids}
    assert clips and not clips & {c.window_id for c in dev}  # calibration clips never evaluate


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench.run", *args, f"tracking.uri=sqlite:///{tmp_path}/m.db",
                           f"hydra.run.dir={tmp_path}/out"], cwd=ROOT, capture_output=True, text=True, timeout=600)


def _no_runs(tmp_path: Path) -> bool:
    if not (tmp_path / "m.db").exists():
        return True
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/m.db")
    return mlflow.search_runs(search_all_experiments=True, output_format="list") == []


@pytest.mark.parametrize("args, line", [
    (["experiment=native_host", "device=xiaomi_14"],
     "config error: device: job native_host does not read the device config group, so `device=xiaomi_14` would "
     "be ignored. Fix: drop it (this job reads model, dataset)"),
    (["experiment=streaming", "dataset=synthetic"],
     "config error: dataset: job streaming runs real audio, and dataset=synthetic holds synthetic trajectories"),
])
def test_an_override_the_job_would_ignore_is_one_line_and_no_run(tmp_path, args, line):
    res = _cli(tmp_path, *args)
    assert res.returncode == 2, res.stderr[-2000:]
    errs = [ln for ln in res.stderr.splitlines() if " error: " in ln]
    assert len(errs) == 1 and errs[0].startswith(line) and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert _no_runs(tmp_path)


def test_an_hf_assisted_mismatch_is_that_baselines_and_ours_fail_the_job():
    import polars as pl

    from workbench.jobs.native import mismatches

    runs = pl.DataFrame({"method": ["target_only", "as2d", "hf_assisted/whisper-base-int8", "hf_assisted/tiny"],
                         "matched": [True, True, False, False]})
    assert mismatches(runs) == {"exactness_mismatches": 0.0, "baseline_mismatches.hf_assisted": 2.0}
    ours = runs.with_columns(pl.Series("matched", [True, False, True, True]))
    assert mismatches(ours)["exactness_mismatches"] == 1.0
