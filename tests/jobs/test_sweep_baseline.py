"""A sweep's target-only: replayed by one job, reused by the others, never across a change of profile or windows.

The real evaluation loop (``jobs.evaluate``), real synthetic windows, the k70_pro profile and a store in a
temporary sweep directory; the Hydra sweep itself is ``tests/test_run.py``'s multirun test.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from workbench.decoding import ExactnessError
from workbench.jobs.config import devices
from workbench.jobs.evaluate import evaluate
from workbench.jobs.sweep_baseline import BaselineStore, ConfigRows, baseline_key
from workbench.jobs.windows import load_windows
from workbench.replay.result import ReplayConfig

CONF = Path(__file__).resolve().parents[2] / "conf"


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        return compose("config", overrides=["job=replay", "methods=[target_only,as2d]", "device=k70_pro",
                                            "dataset.n_windows=4", *overrides])


def _job(cfg, store, profile=None):
    windows = load_windows(cfg)
    profiles = [profile] if profile is not None else devices(cfg)
    return evaluate(windows, ["target_only", "as2d"], profiles, cfg, "producer", store=store)


def _target_only(frames):
    return frames["windows"].filter(pl.col("method") == "target_only").sort("window_id")


def test_second_job_reuses_and_a_changed_profile_windows_or_target_replays_again(tmp_path):
    lines: list[str] = []
    first = _job(_cfg("model.budget=3"), BaselineStore(tmp_path, "run A", lines.append))
    second = _job(_cfg("model.budget=7"), BaselineStore(tmp_path, "run B", lines.append))
    assert "replayed here" in lines[0] and "reused 4 windows replayed by run A" in lines[1]
    assert str(tmp_path) in lines[1]
    assert _target_only(first).equals(_target_only(second))  # the same rows, rounds and stages
    assert first["rounds"].filter(pl.col("method") == "target_only").height == \
        second["rounds"].filter(pl.col("method") == "target_only").height > 0
    assert second["target_only_reuse"].row(0, named=True)["reused"] is True
    # each job's own As²d budget is still replayed by the job itself
    as2d = [f["windows"].filter(pl.col("method") == "as2d")["config"].unique().to_list() for f in (first, second)]
    assert as2d[0] != as2d[1]

    cfg = _cfg("model.budget=7")
    slower = dataclasses.replace(devices(cfg)[0], target_step_ms=devices(cfg)[0].target_step_ms * 1.5)
    third = _job(cfg, BaselineStore(tmp_path, "run C", lines.append), slower)
    assert "replayed here" in lines[2]  # one field of the profile changed: no reuse
    assert _target_only(third)["time"].sum() > _target_only(first)["time"].sum()

    fourth = _job(_cfg("model.budget=7", "dataset.seed=1"), BaselineStore(tmp_path, "run D", lines.append))
    assert "replayed here" in lines[3]  # other windows: no reuse
    assert not _target_only(fourth)["tokens"].equals(_target_only(first)["tokens"])
    _job(_cfg("model.budget=7", "model.target.revision=abc123"), BaselineStore(tmp_path, "run E", lines.append))
    assert "replayed here" in lines[4]  # another target: no reuse
    assert len(list(tmp_path.glob("k70_pro-*/entry.json"))) == 4


def test_reused_rows_are_audited_against_the_reference(tmp_path):
    cfg = _cfg()
    _job(cfg, BaselineStore(tmp_path, "run A", lambda _: None))
    (entry,) = tmp_path.glob("k70_pro-*")
    out = pl.read_parquet(entry / "outputs.parquet")
    bad = out.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(pl.col("output").list.reverse())
                           .otherwise(pl.col("output")).alias("output"))
    bad.write_parquet(entry / "outputs.parquet")
    with pytest.raises(ExactnessError, match="reused from"):
        _job(cfg, BaselineStore(tmp_path, "run B", lambda _: None))


def test_parallel_jobs_replay_it_once(tmp_path):
    cfg = _cfg()
    windows, profile = load_windows(cfg), devices(cfg)[0]
    rc = ReplayConfig("target_only")
    key = baseline_key(windows, profile, rc, {"model": "m"})
    calls, lines = [], []

    def compute() -> ConfigRows:
        calls.append(1)
        time.sleep(0.5)  # the other job arrives while this one holds the entry
        return ConfigRows(pl.DataFrame({"window_id": [w.window_id for w in windows]}), None, None,
                          {w.window_id: w.reference for w in windows})

    jobs = [threading.Thread(target=BaselineStore(tmp_path, f"run {i}", lines.append).rows,
                             args=(windows, profile, key, compute)) for i in range(2)]
    for j in jobs:
        j.start()
    for j in jobs:
        j.join()
    assert len(calls) == 1
    assert sum("waiting for another job" in line for line in lines) == 1
    assert sum("reused 4 windows" in line for line in lines) == 1


def test_the_key_is_the_same_in_another_process(tmp_path):
    """Parallel jobs are separate processes (another hash seed): their keys must still agree."""
    code = "from tests.jobs.test_sweep_baseline import _key; print(_key())"
    keys = {subprocess.run([sys.executable, "-c", code], cwd=CONF.parent, capture_output=True, text=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}, check=True).stdout.strip()
            for seed in ("1", "2")}
    assert keys == {_key()}


def _key() -> str:
    cfg = _cfg()
    return baseline_key(load_windows(cfg), devices(cfg)[0], ReplayConfig("target_only"), {"model": "m"}).digest
