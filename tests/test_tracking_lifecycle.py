"""Run lifecycle under faults: real signals to real processes, checked in the real store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlflow
from mlflow.tracking import MlflowClient

from workbench.tracking import artifact_location, prepare_store, tracked_run
from workbench.tracking.cli import main as runs_main
from workbench.tracking.runs import HOST_TAG, PID_TAG, REAPED_TAG, STARTED_TAG, fail_own_runs, owner_tags, reap

CHILD = Path(__file__).with_name("tracking_child.py")


def _client(db: Path) -> MlflowClient:
    uri = f"sqlite:///{db}"
    prepare_store(uri)
    return MlflowClient(uri)


def _runs(db: Path) -> list:
    c = _client(db)
    return c.search_runs([e.experiment_id for e in c.search_experiments()])


def _spawn(mode: str, db: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(CHILD), mode, str(db)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _run_id(proc: subprocess.Popen) -> str:
    run_id = proc.stdout.readline().strip()
    assert run_id, proc.stderr.read()[-2000:]
    return run_id


def test_owner_tags_sigkill_and_the_reap_command(tmp_path, capsys):
    db = tmp_path / "m.db"
    proc = _spawn("sleep", db)
    run_id = _run_id(proc)
    tags = _client(db).get_run(run_id).data.tags
    assert tags[PID_TAG] == str(proc.pid) and tags[HOST_TAG] == os.uname().nodename
    assert float(tags[STARTED_TAG]) > 0
    proc.kill()
    proc.wait()
    assert _client(db).get_run(run_id).info.status == "RUNNING"  # nothing in the process could react
    assert runs_main(["reap", "--uri", f"sqlite:///{db}", "--dry-run"]) == 0
    assert "would mark FAILED" in capsys.readouterr().out
    assert _client(db).get_run(run_id).info.status == "RUNNING"
    assert runs_main(["reap", "--uri", f"sqlite:///{db}"]) == 0
    out = capsys.readouterr().out
    assert run_id in out and "marked FAILED" in out and "1 run(s) reaped" in out
    run = _client(db).get_run(run_id)
    assert run.info.status == "FAILED" and f"pid {proc.pid}" in run.data.tags[REAPED_TAG]


def test_sigterm_and_a_second_signal_during_cleanup_end_the_run_failed(tmp_path):
    db = tmp_path / "m.db"
    prepare_store(f"sqlite:///{db}")  # the two children then share an initialized store
    single, double = _spawn("sleep", db), _spawn("double", db)
    ids = _run_id(single), _run_id(double)
    single.send_signal(signal.SIGTERM)
    double.send_signal(signal.SIGTERM)
    double.send_signal(signal.SIGINT)  # both pending; the second is handled while the first one's cleanup runs
    for p in (single, double):
        p.wait(timeout=120)
        assert p.returncode != 0
    c = _client(db)
    one, two = (c.get_run(i) for i in ids)
    assert one.info.status == "FAILED" and "Terminated" in one.data.tags["error"]
    assert two.info.status == "FAILED", two.info.status


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_the_next_job_reaps_on_start(tmp_path):
    db = tmp_path / "m.db"
    c = _client(db)
    exp = c.create_experiment("lifecycle")
    dead = c.create_run(exp, tags={PID_TAG: str(_dead_pid()), HOST_TAG: os.uname().nodename}).info.run_id
    with tracked_run("lifecycle", "next", uri=f"sqlite:///{db}"):
        assert _client(db).get_run(dead).info.status == "FAILED"
    assert not [r for r in _runs(db) if r.info.status == "RUNNING"]


def test_reaper_spares_live_owners_remote_hosts_and_reused_pids(tmp_path):
    db = tmp_path / "m.db"
    c = _client(db)
    exp = c.create_experiment("reap")
    me = owner_tags()
    live = c.create_run(exp, tags=me).info.run_id
    remote = c.create_run(exp, tags={**me, HOST_TAG: "another-host"}).info.run_id
    reused = c.create_run(exp, tags={**me, STARTED_TAG: f"{float(me[STARTED_TAG]) - 3600:.3f}"}).info.run_id
    foreign = c.create_run(exp, tags={}).info.run_id
    verdicts = {s.run_id: s.verdict for s in reap(f"sqlite:///{db}")}
    assert verdicts == {live: "alive", remote: "remote", reused: "reaped", foreign: "unowned"}
    assert {r.info.run_id for r in _runs(db) if r.info.status == "RUNNING"} == {live, remote, foreign}


def test_a_process_about_to_exit_fails_its_own_running_runs_and_only_those(tmp_path):
    db = tmp_path / "m.db"
    c = _client(db)
    exp = c.create_experiment("own")
    me = owner_tags()
    owned = c.create_run(exp, tags=me).info.run_id
    done = c.create_run(exp, tags=me).info.run_id
    c.set_terminated(done, "FINISHED")
    other_pid = c.create_run(exp, tags={**me, PID_TAG: str(os.getppid())}).info.run_id
    remote = c.create_run(exp, tags={**me, HOST_TAG: "another-host"}).info.run_id
    assert fail_own_runs("parent died", f"sqlite:///{db}") == [owned]
    status = {r.info.run_id: r.info.status for r in _runs(db)}
    assert status == {owned: "FAILED", done: "FINISHED", other_pid: "RUNNING", remote: "RUNNING"}
    assert c.get_run(owned).data.tags[REAPED_TAG] == "parent died"


def test_jobs_started_together_on_a_fresh_store_all_succeed(tmp_path):
    db = tmp_path / "fresh.db"
    procs = [_spawn("race", db) for _ in range(2)]  # two suffice: the old code lost one of them
    deadline = time.time() + 300
    while len(list(tmp_path.glob("fresh.db.ready.*"))) < len(procs) and time.time() < deadline:
        time.sleep(0.05)  # every child has imported everything and waits at the barrier
    (tmp_path / "fresh.db.go").touch()
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs), "\n".join(e[-800:] for e in errors)
    assert sorted(r.info.status for r in _runs(db)) == ["FINISHED"] * len(procs)


def test_remote_servers_keep_their_own_artifact_root(tmp_path):
    # A local store gets artifacts beside it; a server is never handed this machine's file: path.
    assert artifact_location("http://tracking.example:5000", tmp_path) is None
    assert artifact_location("https://tracking.example", tmp_path) is None
    local = artifact_location(f"sqlite:///{tmp_path}/m.db", tmp_path)
    assert local == (tmp_path / "artifacts").as_uri() and (tmp_path / "artifacts").is_dir()
    with tracked_run("local", "r", uri=f"sqlite:///{tmp_path}/m.db") as run:
        mlflow.log_text("hello", "note.txt")
    assert (tmp_path / "artifacts" / run.info.run_id / "artifacts" / "note.txt").is_file()
