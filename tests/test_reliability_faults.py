"""SIGKILL at random points over 20 trials: afterwards the reaper leaves no RUNNING
run, no job process is left, and the next run reuses only valid cache entries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mlflow.tracking import MlflowClient

from tests.fault_injector import KEY, WINDOWS, window_rows
from workbench.traces.cache import TraceCache
from workbench.traces.schema import rows_to_frame
from workbench.tracking import prepare_store, tracked_run
from workbench.tracking.runs import reap

INJECTOR = Path(__file__).with_name("fault_injector.py")


def test_sigkill_at_random_points_leaves_nothing_running_and_only_valid_cache_entries(tmp_path):
    db, root = tmp_path / "m.db", tmp_path / "traces"
    res = subprocess.run([sys.executable, str(INJECTOR), str(db), str(root), "20", "13"], capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    counts = json.loads(res.stdout.strip().splitlines()[-1])
    assert counts["killed"] >= 10, counts  # most trials really died mid-job
    uri = f"sqlite:///{db}"
    prepare_store(uri)
    states = reap(uri)
    assert all(s.verdict == "reaped" for s in states), states
    client = MlflowClient(uri)
    exps = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(exps)
    assert not [r for r in runs if r.info.status == "RUNNING"]
    # each trial's start reaps the runs earlier kills left behind; the reaper above gets the rest
    assert sum(1 for r in runs if "as2d.reaped" in r.data.tags) >= counts["killed"] // 2

    # the next run: every entry it reuses is valid and equal to what the job meant to write
    with tracked_run("faults", "next", uri=uri):
        cache = TraceCache(root, "pair", KEY).open()
        reused = [w for w in WINDOWS if cache.ready(w, "audio", 100)]
        for w in reused:
            assert cache.frame(w).equals(rows_to_frame(window_rows(w)))
        # what is not reused is absent or was quarantined; temp files of killed writers are never entries
        entries = {p.name.split(".")[0] for p in cache.dir.glob("w*.json")}
        assert entries == set(reused)
