"""MLflow run lifecycle on a real sqlite store: nothing stays RUNNING, failures say why.

* an ordinary exception ends the run FAILED with an ``error`` tag and an ``error.txt`` traceback;
* SIGTERM ends it FAILED too (in a child process, synchronised on a line it prints);
* a sweep's parent run ends FAILED when any child failed, FINISHED when all finished.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import mlflow
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

from workbench.tracking import SweepCallback, tracked_run

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def uri(tmp_path_factory) -> str:
    """One store for the module (creating a sqlite store costs seconds); one experiment per test."""
    return f"sqlite:///{tmp_path_factory.mktemp('store') / 'm.db'}"


def _runs(uri: str, experiment: str) -> list:
    mlflow.set_tracking_uri(uri)
    return mlflow.search_runs(experiment_names=[experiment], output_format="list")


def test_an_ordinary_exception_ends_the_run_failed_with_tag_and_traceback(uri, tmp_path):
    with pytest.raises(ValueError, match="dataset.max_windows"):
        with tracked_run("exception", "boom", uri=uri, root=tmp_path):
            raise ValueError("dataset.max_windows must be positive, got -3")
    (run,) = _runs(uri, "exception")
    assert run.info.status == "FAILED"
    assert run.data.tags["error"] == "ValueError: dataset.max_windows must be positive, got -3"
    text = Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="error.txt",
                                                    dst_path=str(tmp_path / "dl"))).read_text()
    assert text.startswith("Traceback") and "raise ValueError" in text and "got -3" in text


def test_a_clean_run_ends_finished_without_an_error_tag(uri, tmp_path):
    with tracked_run("clean", "ok", uri=uri, root=tmp_path):
        mlflow.log_metric("x", 1.0)
    (run,) = _runs(uri, "clean")
    assert run.info.status == "FINISHED" and "error" not in run.data.tags


CHILD = textwrap.dedent("""
    import sys, time
    from workbench.tracking import tracked_run
    with tracked_run("sigterm", "sigterm", uri=sys.argv[1], root=sys.argv[2]):
        print("RUN STARTED", flush=True)
        time.sleep(120)
""")


def test_sigterm_ends_the_run_failed(uri, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, uri, str(tmp_path)], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline()  # the event: the run exists and its body is running
        assert line.strip() == "RUN STARTED", proc.stderr.read()[-2000:] if not line else line
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    (run,) = _runs(uri, "sigterm")
    assert run.info.status == "FAILED"
    assert "signal 15" in run.data.tags["error"]


def _sweep(uri: str, tmp_path: Path, child_fails: bool) -> str:
    exp = f"sweep-{child_fails}"
    cfg = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path / "sweep")},
                                      "overrides": {"task": ["model.budget=1,3"]}},
                            "tracking": {"uri": uri, "experiment": exp}, "job": "replay"})
    cb = SweepCallback()
    cb.on_multirun_start(cfg)
    parent = (tmp_path / "sweep" / "mlflow_parent_run.txt").read_text().strip()
    with tracked_run(exp, "child-0", uri=uri, root=tmp_path, parent_run_id=parent):
        pass
    try:
        with tracked_run(exp, "child-1", uri=uri, root=tmp_path, parent_run_id=parent):
            if child_fails:
                raise RuntimeError("child 1 failed")
    except RuntimeError:
        pass
    cb.on_multirun_end(cfg)
    return MlflowClient(uri).get_run(parent).info.status


def test_a_sweep_parent_fails_when_a_child_failed(uri, tmp_path):
    assert _sweep(uri, tmp_path, child_fails=True) == "FAILED"


def test_a_sweep_parent_finishes_when_every_child_finished(uri, tmp_path):
    assert _sweep(uri, tmp_path, child_fails=False) == "FINISHED"
