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
from workbench.errors import ConfigError

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


DEMO = ["experiment=demo", "dataset=librispeech", "dataset.split=all", "devices=[k70_pro]", "budgets=[1,3]",
        "workers=1"]


def test_the_demo_selects_on_the_cohorts_dev_rows_and_measures_its_test_rows(tmp_path, speech, monkeypatch):
    """A paper dataset's cohort already drew dev and test: the demo's budget selection sees only
    its dev rows, and the oracle and the native runs only its test rows; nothing is split again."""
    from dataclasses import replace

    from workbench.jobs.demo_traces import demo_corpus
    from workbench.jobs.native_demo import measured_windows
    from workbench.jobs.oracle import select_and_oracle
    from workbench.jobs.windows import cohort_labels, cohort_tables
    from workbench.replay.profile import load_profile
    from workbench.replay.synthetic import SyntheticSpec, synthetic_windows

    monkeypatch.setenv("AS2D_CACHE", str(tmp_path / "cache"))
    root = fx.librispeech(tmp_path / "data", speech)
    # a seeded re-split would take round(3 * 0.6) = 2 dev windows; the cohort drew 1
    cfg = _cfg(*DEMO, f"dataset.root={root}", *COHORT, "dataset.dev_fraction=0.6")
    clips = demo_corpus(cfg).clips  # the cohort's dev and test rows, written beside cohort.parquet
    cohort = cohort_tables(cfg)["cohort"]
    rows = dict(zip(cohort["window_id"], cohort["split"], strict=True))
    dev_ids = {c.window_id for c in clips if rows[c.window_id] == "dev"}
    test_ids = {c.window_id for c in clips if rows[c.window_id] == "test"}
    assert len(dev_ids) == 1 and len(test_ids) == 2
    # replayable windows under the clips' ids (the traces' contents do not matter to the split)
    windows = [replace(w, window_id=c.window_id, dataset="librispeech")
               for w, c in zip(synthetic_windows(SyntheticSpec(n_windows=3, seed=1)), clips, strict=True)]
    labels = cohort_labels(cfg, windows)
    assert labels is not None
    _, tables, row = select_and_oracle(windows, load_profile("k70_pro"), cfg, oracle=True, labels=labels)
    assert (row["dev_windows"], row["test_windows"]) == (1, 2)
    assert set(tables["oracle_k70_pro"]["window_id"]) == test_ids
    assert {w.window_id for w in measured_windows(cfg, windows, labels)} == test_ids
    # windows without the cohort's dev rows cannot be selected on: one line, not a split of test rows
    with pytest.raises(ConfigError, match="dataset.split: job demo selects on the cohort's dev rows"):
        cohort_labels(cfg, [w for w in windows if w.window_id in test_ids])


def test_the_demo_on_one_split_of_a_paper_dataset_is_one_line(tmp_path):
    from workbench.jobs.demo import validate

    cfg = _cfg(*DEMO, "dataset.split=test", f"dataset.root={tmp_path}")
    with pytest.raises(ConfigError, match="dataset.split: the demo selects on the cohort's dev rows.*Fix: set "
                                          "dataset.split=all"):
        validate(cfg)
