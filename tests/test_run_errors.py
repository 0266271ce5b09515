"""Errors during a run: every error of the family is one line, rc 2, and a FAILED run with the message.

``tests/error_job.py`` runs the real entry point (Hydra, MLflow) with a job that raises each error
kind once its run exists; an unexpected exception keeps its traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

ROOT = Path(__file__).resolve().parents[1]

# error_job kind -> (the line's prefix, a piece of its message)
EXPECTED = {
    "config": ("config error: model.budget: injected config fault. Fix: set model.budget", "injected config"),
    "data": ("data error: corpus/x.txt: injected data fault", "injected data"),
    "audio": ("audio error: corpus/a.flac: injected audio fault", "injected audio"),
    "model": ("model error: model.target: injected model fault", "injected model"),
    "profile": ("profile error: conf/device/x.yaml: injected profile fault", "injected profile"),
    "phone": ("phone error: device 123: injected phone fault", "injected phone"),
    "protocol": ("protocol error: line 3: injected protocol fault", "injected protocol"),
    "runner": ("runner error: as2d_runner: injected runner fault", "injected runner"),
    "missing_weights": ("model error: model.target: injected missing weights", "injected missing"),
    "pair": ("config error: model.producer.family: injected pair fault", "injected pair"),
    "trace_schema": ("data error: traces/w.parquet: injected schema fault", "injected schema"),
    "layout": ("config error: dataset.root=/nowhere: injected layout fault", "injected layout"),
    "device_profile": ("profile error: conf/device/x.yaml: field 'costs.verify': injected field fault",
                       "injected field"),
    "producer_kept": ("producer error: window w0: injected producer fault", "injected producer"),
    "mismatch": ("exactness error: job replay: 1 run(s) of our schemes did NOT match the greedy target output",
                 "did NOT match"),
}


def _sections(stderr: str) -> dict[str, tuple[list[str], int]]:
    out: dict[str, tuple[list[str], int]] = {}
    kind, lines = None, []
    for ln in stderr.splitlines():
        if ln.startswith("=== rc "):
            out[kind] = (lines, int(ln.split()[-1]))
        elif ln.startswith("=== "):
            kind, lines = ln[4:], []
        else:
            lines.append(ln)
    return out


def _run(tmp_path: Path, kinds: list[str], **env: str) -> dict[str, tuple[list[str], int]]:
    db = tmp_path / "m.db"
    res = subprocess.run([sys.executable, "tests/error_job.py", ",".join(kinds), str(tmp_path / "out"),
                          f"tracking.uri=sqlite:///{db}"], cwd=ROOT, capture_output=True, text=True, timeout=900,
                         env={**os.environ, **env})
    assert res.returncode == 0, res.stderr[-3000:]
    return _sections(res.stderr)


def test_each_error_kind_is_one_line_rc_2_and_a_failed_run_with_the_message(tmp_path):
    kinds = [*EXPECTED, "bug"]
    sections = _run(tmp_path, kinds)
    for kind, (line, _) in EXPECTED.items():
        lines, rc = sections[kind]
        assert rc == 2, (kind, lines)
        assert not any("Traceback" in ln for ln in lines), (kind, lines)
        errs = [ln for ln in lines if " error: " in ln]
        assert len(errs) == 1 and errs[0].startswith(line), (kind, lines)
        kept = [ln for ln in lines if ln.startswith("kept: ")]
        want = {"producer_kept": ["kept: 3 windows in tables/partial"],
                "mismatch": [f"kept: every table of this run is logged with it and in {tmp_path}/out/mismatch"]}
        assert kept == want.get(kind, []), (kind, lines)
    # an unexpected exception is a bug: its traceback stays, and it is not an rc-2 user error
    bug_lines, bug_rc = sections["bug"]
    assert bug_rc != 2 and any("ZeroDivisionError: injected bug" in ln for ln in bug_lines)

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'm.db'}")
    runs = mlflow.search_runs(search_all_experiments=True, output_format="list")
    assert len(runs) == len(kinds) and {r.info.status for r in runs} == {"FAILED"}
    client = mlflow.MlflowClient()
    for kind, (_, piece) in EXPECTED.items():
        (run,) = [r for r in runs if piece in r.data.tags.get("error", "")]
        if kind == "mismatch":  # what the run measured is kept with it
            assert "tables/runs.parquet" in [a.path for a in client.list_artifacts(run.info.run_id, "tables")]
        log = Path(client.download_artifacts(run.info.run_id, "run.log", str(tmp_path / kind)))
        text = log.read_text()
        assert piece in text and "Traceback (most recent call last)" in text, kind  # the traceback is kept


def test_full_error_prints_the_traceback_too(tmp_path):
    lines, rc = _run(tmp_path, ["audio"], HYDRA_FULL_ERROR="1")["audio"]
    assert rc == 2 and any("Traceback" in ln for ln in lines)
    assert lines[-1].startswith(EXPECTED["audio"][0])


def test_an_unusable_tracking_store_is_one_line_before_any_work(tmp_path):
    """A dead tracking server or an unwritable sqlite path fails on one quick probe, not after MLflow's
    retries (minutes): rc 2, one line naming MLFLOW_TRACKING_URI and the fix, and the job never ran."""
    (tmp_path / "a_file").write_text("")
    for uri in ("http://127.0.0.1:9", f"sqlite:///{tmp_path}/a_file/mlflow.db"):
        env = {**os.environ, "MLFLOW_TRACKING_URI": uri}
        res = subprocess.run([sys.executable, "-m", "workbench.run", "dataset.n_windows=2", "methods=[target_only]",
                              f"hydra.run.dir={tmp_path}/out"], cwd=ROOT, capture_output=True, text=True, env=env,
                             timeout=120)  # MLflow's own retries against port 9 take minutes
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1, (uri, res.stderr[-2000:])
        assert lines[0].startswith(f"config error: MLFLOW_TRACKING_URI={uri}: the MLflow tracking store cannot be used")
        assert "Fix: " in lines[0] and "Traceback" not in res.stderr
        assert not (tmp_path / "out" / "summary.md").exists()  # no work was done


def _flaky_replay(monkeypatch, fault: BaseException) -> list[str]:
    """Replay's first window runs; the second raises ``fault`` (a failure part way through the job)."""
    import workbench.jobs.evaluate as E

    real, calls = E.replay, []

    def flaky(w, *args, **kwargs):  # noqa: ANN001, ANN202 - replay's signature
        calls.append(w.window_id)
        if len(calls) > 1:
            raise fault
        return real(w, *args, **kwargs)

    monkeypatch.setattr(E, "replay", flaky)
    return calls


def _replay_cfg(tmp_path: Path):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=["job=replay", "dataset.n_windows=3", "methods=[target_only]",
                                            f"tracking.uri=sqlite:///{tmp_path}/m.db", f"out_dir={tmp_path}/out"])


def _partial_rows(tmp_path: Path) -> tuple[str, list[dict]]:
    import polars as pl

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/m.db")
    (run,) = mlflow.search_runs(search_all_experiments=True, output_format="list")
    client = mlflow.MlflowClient()
    assert [a.path for a in client.list_artifacts(run.info.run_id, "tables/partial")] == [
        "tables/partial/replay_windows.parquet"]
    got = client.download_artifacts(run.info.run_id, "tables/partial/replay_windows.parquet", str(tmp_path))
    return run.info.status, pl.read_parquet(got).to_dicts()


def test_a_job_failing_part_way_keeps_the_windows_it_measured(tmp_path, monkeypatch):
    from workbench.errors import DataError
    from workbench.run import execute

    calls = _flaky_replay(monkeypatch, DataError("injected window fault", where="window w1"))
    with pytest.raises(DataError) as info:
        execute(_replay_cfg(tmp_path))
    kept = info.value.kept
    assert kept.startswith("1 window(s) measured before the failure (1 rows: replay_windows.parquet) under "
                           "tables/partial on this FAILED run") and "rerun the same command" in kept
    assert info.value.headline().splitlines()[1] == f"kept: {kept}"  # the second line of the error
    status, rows = _partial_rows(tmp_path)
    assert status == "FAILED" and [r["window_id"] for r in rows] == calls[:1] and rows[0]["tokens"] > 0
    assert (tmp_path / "out" / "tables" / "partial" / "replay_windows.parquet").is_file()


def test_a_bug_part_way_keeps_the_windows_too_and_keeps_its_traceback(tmp_path, monkeypatch, capsys):
    from workbench.run import execute

    calls = _flaky_replay(monkeypatch, ZeroDivisionError("injected bug"))
    with pytest.raises(ZeroDivisionError):
        execute(_replay_cfg(tmp_path))
    assert [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("kept: 1 window(s) measured")]
    status, rows = _partial_rows(tmp_path)
    assert status == "FAILED" and [r["window_id"] for r in rows] == calls[:1]
