"""Job ``native_host`` through the real entry point (Hydra, MLflow) on tiny real Whisper models:
the method filter (``native.methods``), a 2-job sweep under the default joblib launcher, a run
that fails part way and keeps the window it measured, and ``kill -9`` of a native sweep's parent."""

from __future__ import annotations

import contextlib
import os
import runpy
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import polars as pl
import psutil
import pytest
from hydra import compose, initialize_config_dir

from tests.native.test_native import producer_dir, tiny_dir  # noqa: F401  (fixtures)
from workbench.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
CHOSEN = {"target_only@1t", "target_only@2t", "as2d/tiny-producer"}  # target_only and as2d, nothing else


def _model(target: Path, producer: Path) -> list[str]:
    """The tiny pair in place of the Whisper pair; the producer also serves as serial drafter."""
    out = [f"model.target.local_path={target}", "model.target.name=tiny-target", "model.target.kernels=plain",
           "model.drafter.name=tiny-producer", "model.serial_drafter.name=tiny-serial"]
    for role in ("drafter", "serial_drafter"):
        out += [f"model.{role}.local_path={producer}", f"model.{role}.quantize=null", f"model.{role}.vocabulary=shared"]
    for role in ("target", "drafter", "serial_drafter"):
        out += [f"model.{role}.hub_id=null", f"model.{role}.offline_package=null"]
    return [*out, "model.drafter.batch_tokens=4", "model.external_sources=[]", "model.max_new_tokens=16"]


def _job(target: Path, producer: Path, tmp: Path, windows: int) -> list[str]:
    return ["experiment=native_host", *_model(target, producer), "native.same_vocab_model=null",
            "native.methods=[target_only,as2d]", "native.repeats=1", "native.warmup=0",
            f"native.max_windows={windows}", "native.max_seconds=4", f"tracking.uri=sqlite:///{tmp}/m.db"]


def _runs(tmp: Path) -> list:
    mlflow.set_tracking_uri(f"sqlite:///{tmp}/m.db")
    found = mlflow.search_runs(search_all_experiments=True, output_format="list")
    return [r for r in found if r.data.tags.get("as2d.role") != "config"]


def _compose(*overrides: str):
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=["experiment=native_host", *overrides])


def test_the_method_filter_defaults_to_every_family_and_names_unknown_ones():
    from workbench.jobs.native import chosen_methods
    from workbench.native.methods import FAMILIES

    assert chosen_methods(_compose()) == list(FAMILIES)  # today's full set by default
    assert chosen_methods(_compose("native.methods=[as2d]")) == ["target_only", "as2d"]  # the reference joins
    with pytest.raises(ConfigError) as err:
        chosen_methods(_compose("native.methods=[as2d,hf,sd_online]"))
    assert err.value.headline() == ("config error: native.methods: unknown method families hf, sd_online. "
                                    f"Fix: choose from {', '.join(FAMILIES)}")
    with pytest.raises(ConfigError, match="native.methods: need a non-empty list"):
        chosen_methods(_compose("native.methods=as2d"))


@pytest.mark.slow
def test_a_two_job_native_sweep_under_joblib_finishes_both_runs_exact(tmp_path, tiny_dir, producer_dir):  # noqa: F811
    res = subprocess.run([sys.executable, "-m", "workbench.run", "-m", *_job(tiny_dir, producer_dir, tmp_path, 1),
                          "model.budget=2,3", "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={tmp_path}/sweep"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    runs = _runs(tmp_path)
    (parent,) = [r for r in runs if r.info.run_name.startswith("sweep:")]
    jobs = [r for r in runs if r is not parent]
    assert parent.info.status == "FINISHED" and sorted(r.data.params["model.budget"] for r in jobs) == ["2", "3"]
    client = mlflow.MlflowClient()
    for run in jobs:
        assert run.info.status == "FINISHED" and run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.data.metrics["exactness_mismatches"] == 0
        table = pl.read_parquet(client.download_artifacts(run.info.run_id, "tables/runs.parquet",
                                                          str(tmp_path / run.info.run_id)))
        assert set(table["method"]) == CHOSEN  # the filter: no HF assisted, SD, ASP or as2d_online
        assert table["matched"].all() and (table["tokens"] > 1).all()  # the audit: each run vs target-only
        # nothing was priced, so no first-use calibration ran and no profile is attached
        assert "profiles" not in {a.path for a in client.list_artifacts(run.info.run_id)}


def test_a_native_run_failing_part_way_keeps_the_first_window(tmp_path, tiny_dir, producer_dir,  # noqa: F811
                                                              monkeypatch, capfd):
    """The second window's first run raises (a producer fault): one line and its ``kept:`` line, rc 2,
    and the first window's measurements as a partial table on the FAILED run."""
    import workbench.native.bench as B
    from workbench.native.driver import ProducerError
    real, seen = B.run_scheme, []

    def faulty(host, setup, window, scheme):  # noqa: ANN001, ANN202 - run_scheme's signature
        seen.append(window.window_id)
        if len(set(seen)) > 1:
            raise ProducerError(f"window {window.window_id}: injected producer fault")
        return real(host, setup, window, scheme)

    monkeypatch.setattr(B, "run_scheme", faulty)
    monkeypatch.setattr(sys, "argv", ["workbench.run", *_job(tiny_dir, producer_dir, tmp_path, 2),
                                      f"hydra.run.dir={tmp_path}/out"])
    with pytest.raises(SystemExit) as done:  # as `python -m workbench.run`, in this process (tests/error_job.py)
        runpy.run_module("workbench.run", run_name="__main__")
    assert done.value.code == 2
    err = capfd.readouterr().err.splitlines()
    assert "Traceback" not in "\n".join(err)
    first, second = dict.fromkeys(seen)
    lines = [ln for ln in err if " error: " in ln or ln.startswith("kept: ")]
    assert lines[0] == f"producer error: window {second}: injected producer fault", err[-5:]
    assert lines[1].startswith(f"kept: 1 window(s) measured before the failure ({len(CHOSEN)} rows: "
                               "native_runs.parquet) under tables/partial on this FAILED run") and len(lines) == 2
    (run,) = _runs(tmp_path)
    assert run.info.status == "FAILED" and "injected producer fault" in run.data.tags["error"]
    got = mlflow.MlflowClient().download_artifacts(run.info.run_id, "tables/partial/native_runs.parquet",
                                                   str(tmp_path))
    rows = pl.read_parquet(got)
    assert set(rows["window_id"]) == {first} and set(rows["method"]) == CHOSEN and (rows["tokens"] > 1).all()


def _producers(kids: list[psutil.Process], workers: set[int]) -> list[psutil.Process]:
    """The native producer processes: spawned children of the launcher's workers."""
    out = []
    for k in kids:
        with contextlib.suppress(psutil.Error):
            if k.ppid() in workers and "spawn_main" in " ".join(k.cmdline()):
                out.append(k)
    return out


@pytest.mark.slow
def test_kill_9_of_a_native_sweeps_parent_leaves_no_worker_producer_or_semaphore(
        tmp_path, tiny_dir, producer_dir):  # noqa: F811
    """Both jobs measuring, each with its producer process: ``kill -9`` of the sweep's parent, and within
    30 s no loky worker, resource tracker or producer is alive, their semaphores are gone from
    /dev/shm, and both job runs are FAILED."""
    from tests.test_sweep_orphans import _alive, _cmd, _job_runs, _sems

    db = tmp_path / "m.db"
    parent = subprocess.Popen([sys.executable, "-m", "workbench.run", "-m", *_job(tiny_dir, producer_dir, tmp_path, 1),
                               "native.repeats=1000", "model.budget=2,3", "hydra.launcher.n_jobs=2",
                               f"hydra.sweep.dir={tmp_path}/sweep"], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=(tmp_path / "stderr").open("w"), start_new_session=True)
    try:
        deadline, kids, producers = time.time() + 600, [], []
        while time.time() < deadline and parent.poll() is None:
            kids = psutil.Process(parent.pid).children(recursive=True)
            workers = {k.pid for k in kids if "loky" in _cmd(k)}
            producers = _producers(kids, workers)
            if len(producers) == 2 and [s for s, _ in _job_runs(db)] == ["RUNNING", "RUNNING"]:
                break
            time.sleep(0.5)
        assert len(producers) == 2, (tmp_path / "stderr").read_text()[-2000:]
        held = _sems([k.pid for k in kids])
        assert held  # the producers' events and buffer locks
        parent.kill()  # SIGKILL: the sweep's parent runs no cleanup
        parent.wait()
        gone_by = time.time() + 30
        while time.time() < gone_by and any(_alive(k) for k in kids):
            time.sleep(0.2)
        left = [_cmd(k)[:100] for k in kids if _alive(k)]
        assert not left, left
        assert not held & set(os.listdir("/dev/shm")), sorted(held & set(os.listdir("/dev/shm")))
        assert [s for s, _ in _job_runs(db)] == ["FAILED", "FAILED"]  # ended by the sweep's death, not RUNNING
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)
