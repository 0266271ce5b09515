"""The front door: Hydra composition, config validation, MLflow run lifecycle, multirun sweeps."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import mlflow
import pytest
from hydra import compose, initialize_config_dir

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


def run_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench.run", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def runs(db: Path, role: str | None = None) -> list:
    """Job and sweep runs (``role=None``), or the runs of one ``as2d.role`` (``job``, ``config``, ``sweep``)."""
    if not db.exists():
        return []
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    found = mlflow.search_runs(search_all_experiments=True, output_format="list")
    if role is None:
        return [r for r in found if r.data.tags.get("as2d.role") != "config"]
    return [r for r in found if r.data.tags.get("as2d.role") == role]


@pytest.mark.parametrize("override, key", [
    ("model.budget=-1", "model.budget"),
    ("model.budget=25", "model.budget"),
    ("methods=[as2d,nope]", "methods"),
])
def test_bad_override_gives_one_readable_error_and_no_run(tmp_path, override, key):
    db = tmp_path / "m.db"
    res = run_cli(override, f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={tmp_path}/out")
    assert res.returncode == 2
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("config error")]
    assert len(lines) == 1 and lines[0].startswith(f"config error: {key}:")
    assert "Traceback" not in res.stderr
    assert runs(db) == []


def test_misspelt_method_setting_is_named_before_any_run(tmp_path):
    db = tmp_path / "m.db"
    res = run_cli("+method.treshold=0.5", f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={tmp_path}/out")
    assert res.returncode == 2
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("config error")]
    assert line.startswith("config error: method:") and "'treshold'" in line and "'threshold'" in line
    assert runs(db) == []


def test_unknown_device_is_named_with_the_options(tmp_path):
    res = run_cli("device=pixel99", f"tracking.uri=sqlite:///{tmp_path}/m.db", f"hydra.run.dir={tmp_path}/out")
    assert res.returncode != 0
    assert "device/pixel99" in res.stderr and "k70_pro" in res.stderr


def test_missing_weights_name_the_model_and_three_remedies(tmp_path):
    res = run_cli("experiment=demo", "model.target.offline_package=null", "model.target.local_path=/nonexistent",
                  f"tracking.uri=sqlite:///{tmp_path}/m.db", f"hydra.run.dir={tmp_path}/out")
    assert res.returncode == 2
    assert "model.target" in res.stderr and "whisper-base" in res.stderr
    for remedy in ("hub id", "local dir", "offline package"):
        assert remedy in res.stderr
    assert runs(tmp_path / "m.db") == []


def test_width_the_profile_does_not_price_fails_before_work(tmp_path):
    res = run_cli("device=xiaomi_14", "model.budget=20", f"tracking.uri=sqlite:///{tmp_path}/m.db",
                  f"hydra.run.dir={tmp_path}/out")
    assert res.returncode == 2 and "K=21" in res.stderr and "xiaomi_14" in res.stderr


def test_replay_job_logs_params_metrics_and_artifacts(tmp_path):
    db = tmp_path / "m.db"
    res = run_cli("experiment=replay", "dataset.n_windows=4", f"tracking.uri=sqlite:///{db}",
                  f"hydra.run.dir={tmp_path}/out")
    assert res.returncode == 0, res.stderr[-2000:]
    (run,) = runs(db)
    assert run.info.status == "FINISHED"
    assert run.data.params["model.budget"] == "3" and run.data.params["job"] == "replay"
    # per-configuration metrics live on the child runs; the job's full set is its metrics.json artifact
    m = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="metrics.json",
                                                           dst_path=str(tmp_path / "m"))).read_text())
    _check_replay_tables(run, m, tmp_path)
    assert 0 <= m["k70_pro.as2d.acceptance"] <= 1
    arts = {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id)}
    assert {"tables", "figures", "hydra", "summary.md", "summary.html", "profiles"} <= arts
    # Only the settings it used: four methods ran, so no single `method.*`; the profile is a file.
    assert not [k for k in run.data.params if k.startswith(("method.", "device."))]
    assert run.data.params["device"] == "k70_pro" and run.data.tags["SYNTHETIC"] == "true"
    # experiment=replay puts k70_pro at its deployed budget 7, not model.budget 3: figure titles read the tag
    from workbench.figures.selection import run_budgets

    assert run.data.tags["as2d.budgets"] == "7" and run_budgets(run) == {7}
    assert run.info.run_name == "replay-k70_pro-b7-synthetic"  # the name says the budget it replayed
    figs = {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id, "figures")}
    assert {"figures/tps_cdf.png", "figures/tps_cdf.svg"} <= figs
    assert (db.parent / "artifacts").is_dir()  # artifacts live beside the store
    # The summary leads with speedup beside the paper's, its values rounded for display (the metrics are not).
    md = Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="summary.md",
                                                  dst_path=str(tmp_path / "md"))).read_text()
    cols = [c.strip() for c in md.splitlines()[2].strip("|").split("|")]
    assert cols[:4] == ["device", "method", "speedup", "paper_speedup"], cols
    tps = m["k70_pro.as2d.tps"]
    assert f"| {tps:.4g} |" in md and float(f"{tps:.4g}") != tps
    assert not re.search(r"\d\.\d{5,}", md)


def _check_replay_tables(run, m: dict, tmp_path: Path) -> None:
    """Independent expectations from the logged tables and the profile, not the job's own numbers."""
    import polars as pl

    from workbench.replay import load_profile

    def table(name: str) -> pl.DataFrame:
        path = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path=f"tables/{name}.parquet",
                                                   dst_path=str(tmp_path / "dl"))
        return pl.read_parquet(path).filter(pl.col("device") == "k70_pro")

    wins = table("windows")
    # Target-only by hand: one plain step per token after the prefill's, each the profile's step
    # cost (D.2.2), nothing else on the clock.
    t = wins.filter(pl.col("method") == "target_only")
    step_s = load_profile("k70_pro").target_step_ms / 1000.0
    assert t.height == 4
    assert m["k70_pro.target_only.tps"] == pytest.approx(t["tokens"].sum() / ((t["tokens"] - 1).sum() * step_s))
    # As²d pools tokens over time from its own rows, and its speedup is against target-only's TPS.
    a = wins.filter(pl.col("method") == "as2d")
    assert m["k70_pro.as2d.tps"] == pytest.approx(a["tokens"].sum() / a["time"].sum())
    assert m["k70_pro.as2d.speedup"] == pytest.approx(m["k70_pro.as2d.tps"] / m["k70_pro.target_only.tps"])
    # Exactness from the round records themselves: every method commits target-only's output.
    rounds = table("rounds").sort("round")
    out = rounds.group_by(["method", "config", "window_id"], maintain_order=True).agg(
        pl.col("root").first(), pl.col("committed").explode().alias("tokens"))
    ref = {r["window_id"]: [r["root"], *r["tokens"]] for r in out.filter(pl.col("method") == "target_only").iter_rows(
        named=True)}
    assert {w: len(v) for w, v in ref.items()} == dict(zip(t["window_id"], t["tokens"], strict=True))
    for r in out.filter(pl.col("method") != "target_only").iter_rows(named=True):
        assert [r["root"], *r["tokens"]] == ref[r["window_id"]], (r["method"], r["config"], r["window_id"])
    assert set(out["method"].to_list()) == {"target_only", "sd", "asp", "as2d"}


def test_ctrl_c_ends_the_run_failed_not_running(tmp_path):
    db = tmp_path / "m.db"
    proc = subprocess.Popen([sys.executable, "-m", "workbench.run", "experiment=oracle", "dataset.n_windows=600",
                             f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={tmp_path}/out"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Synchronised on an event, not a sleep: the run is RUNNING and has logged its params, so the
    # job's body is under way (a 600-window oracle runs for many seconds after that).
    query = ("select r.status, count(p.key) from runs r left join params p on p.run_uuid = r.run_uuid "
             "group by r.run_uuid")
    deadline = time.time() + 300
    while time.time() < deadline:
        rows = []
        if db.exists():
            try:
                with sqlite3.connect(db) as con:
                    rows = con.execute(query).fetchall()
            except sqlite3.OperationalError:  # tables not created yet
                rows = []
        if rows and rows[0][0] == "RUNNING" and rows[0][1] > 0:
            break
        if proc.poll() is not None:
            pytest.fail(f"the job ended before it could be interrupted: {proc.stderr.read()[-2000:]}")
        time.sleep(0.1)  # polling interval for the event, not a guess at how long the job takes
    else:
        proc.kill()
        pytest.fail("the job never started a run")
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    (run,) = runs(db)
    assert run.info.status == "FAILED"
    assert "KeyboardInterrupt" in run.data.tags["error"]


def test_multirun_has_a_parent_run_with_tagged_children(tmp_path):
    db = tmp_path / "m.db"
    res = run_cli("-m", "job=replay", "dataset.n_windows=4", "model.budget=1,3", "device=k70_pro",
                  "methods=[target_only,as2d]", f"tracking.uri=sqlite:///{db}", f"hydra.sweep.dir={tmp_path}/sweep")
    assert res.returncode == 0, res.stderr[-2000:]
    all_runs = runs(db)
    parents = [r for r in all_runs if r.info.run_name.startswith("sweep:")]
    children = [r for r in all_runs if r not in parents]
    assert len(parents) == 1 and len(children) == 2
    pid = parents[0].info.run_id
    assert parents[0].info.status == "FINISHED"
    assert all(c.data.tags["mlflow.parentRunId"] == pid and c.info.status == "FINISHED" for c in children)
    assert sorted(c.data.params["model.budget"] for c in children) == ["1", "3"]
    # The sweep parent records what the sweep varied and fixed.
    assert parents[0].data.params["model.budget"] == "1,3" and parents[0].data.params["device"] == "k70_pro"
    # One configuration run per (job, method), each a child of its job run, with a plain `tps`:
    # MLflow's Compare view over them has no NaN column.
    configs = runs(db, "config")
    assert len(configs) == 2 * 2
    jobs = {c.info.run_id: c.data.params["model.budget"] for c in children}
    assert all(c.data.tags["mlflow.parentRunId"] in jobs and c.data.tags["sweep_parent"] == pid for c in configs)
    assert all(c.data.metrics["tps"] > 0 for c in configs)
    as2d = sorted((c.data.params["budget"], c.info.run_name) for c in configs if c.data.params["method"] == "as2d")
    assert as2d == [("1", "as2d-b1-k70_pro-replay-synthetic"), ("3", "as2d-b3-k70_pro-replay-synthetic")]
    for c in configs:  # a configuration's budget is the budget of the job that ran it
        if c.data.params["method"] == "as2d":
            assert c.data.params["budget"] == jobs[c.data.tags["mlflow.parentRunId"]]
    # The as2d child of the budget-3 job reports the job's own as2d TPS under the plain name.
    b3 = next(r for r in children if r.data.params["model.budget"] == "3")
    c3 = next(c for c in configs if c.info.run_name == "as2d-b3-k70_pro-replay-synthetic")
    assert b3.info.run_name == "replay-k70_pro-b3-synthetic" and not any(k.startswith("k70_pro.as2d.")
                                                                          for k in b3.data.metrics)
    assert c3.data.metrics["tps"] > 0 and c3.data.tags["mlflow.note.content"].startswith("as2d/")
    names = {a.path for a in mlflow.MlflowClient().list_artifacts(pid)}
    assert {"summary.md", "summary.html", "summary.parquet"} <= names
    # The sweep answers at sweep level: its own target-only once, each as2d configuration's speedup over it,
    # sortable metrics on the parent, and the table and the parent's URL on the console.
    parent = mlflow.MlflowClient().get_run(pid)
    by_name = {c.info.run_name: c for c in configs}
    t = by_name["target_only-k70_pro-replay-synthetic"].data.metrics["tps"]
    best = max(c.data.metrics["tps"] for c in configs if c.data.params["method"] == "as2d")
    assert parent.data.metrics["best_speedup"] == pytest.approx(best / t)
    assert parent.data.metrics["configurations"] == 3  # target-only once, two as2d budgets
    assert parent.data.tags["best_config"].startswith("as2d-b") and "best speedup" in parent.data.tags[
        "mlflow.note.content"]
    assert f"sweep parent run {pid} (FINISHED); open it: python -m workbench.ui" in res.stdout
    assert "best speedup" in res.stdout
    # Target-only is replayed by one job and reused by the other, which names the entry and the run.
    assert res.stdout.count("target-only on k70_pro: replayed here") == 1
    assert res.stdout.count("target-only on k70_pro: reused 4 windows replayed by run ") == 1
    targets = [c for c in configs if c.data.params["method"] == "target_only"]
    (reused,) = [c for c in targets if "reused_from" in c.data.params]
    (replayed,) = [c for c in targets if c is not reused]
    assert reused.data.params["reused_from"] == f"run {replayed.data.tags['mlflow.parentRunId']}"
    assert reused.data.metrics["tps"] == replayed.data.metrics["tps"]
    assert len({c.data.params["target_only_key"] for c in configs}) == 1
    assert list((tmp_path / "sweep" / "target_only").glob("k70_pro-*/entry.json"))
    for r in [*runs(db), *configs]:  # every run, sweep parent to configuration, has a one-line description
        line = r.data.tags.get("mlflow.note.content", "")
        assert line and "\n" not in line, (r.info.run_name, line)


@pytest.mark.parametrize("launcher, target", [
    ("joblib", "JoblibLauncher"), ("ray", "RayLauncher"), ("submitit_slurm", "SlurmLauncher"),
])
def test_launcher_configs_compose(launcher, target):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[f"hydra/launcher={launcher}", "experiment=replay"],
                      return_hydra_config=True)
    assert target in cfg.hydra.launcher._target_
    assert cfg.job == "replay" and list(cfg.methods) == ["target_only", "sd", "asp", "as2d"]


@pytest.mark.slow
def test_a_sweep_stopped_by_a_refused_job_ends_its_parent_failed(tmp_path):
    """The second job's budget is refused by validation: Hydra stops the sweep there, without its end
    callback, and the parent run must still not be left RUNNING."""
    db = tmp_path / "m.db"
    res = run_cli("-m", "job=replay", "dataset.n_windows=4", "model.budget=1,-1", "device=k70_pro",
                  "methods=[target_only,as2d]", f"tracking.uri=sqlite:///{db}", f"hydra.sweep.dir={tmp_path}/sweep")
    assert res.returncode != 0
    assert "model.budget" in res.stderr
    (parent,) = [r for r in runs(db) if r.info.run_name.startswith("sweep:")]
    assert parent.info.status == "FAILED" and "before its end" in parent.data.tags["error"]
    assert not [r for r in runs(db) if r.info.status == "RUNNING"]


RAY_START_TIMEOUT = "The current node timed out during startup"  # Ray's fixed 30 s wait for its raylet


def test_ray_launcher_sweep_in_local_mode(tmp_path):
    db = tmp_path / "m.db"
    args = ("-m", "hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2",
            "+hydra.launcher.ray.init.include_dashboard=false", "job=replay", "dataset.n_windows=4",
            "model.budget=1,3", "methods=[target_only,as2d]", f"tracking.uri=sqlite:///{db}")
    res = run_cli(*args, f"hydra.sweep.dir={tmp_path}/sweep")
    if res.returncode != 0 and RAY_START_TIMEOUT in res.stderr:
        # Ray gives its raylet 30 s to register, a limit a 2-core machine busy with the rest of the
        # suite can miss before any job of ours starts: that is Ray's start-up, so it gets one more try.
        res = run_cli(*args, f"hydra.sweep.dir={tmp_path}/sweep2")
    assert res.returncode == 0, res.stderr[-2000:]
    children = [r for r in runs(db) if not r.info.run_name.startswith("sweep:")]
    assert len(children) == 2 and all(c.info.status == "FINISHED" for c in children)


def test_mlflow_tracking_uri_env_overrides_the_default(tmp_path):
    db = tmp_path / "env.db"
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{db}"}
    res = subprocess.run([sys.executable, "-m", "workbench.run", "dataset.n_windows=2", "methods=[target_only]",
                          f"hydra.run.dir={tmp_path}/out"], cwd=ROOT, capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert len(runs(db)) == 1


def test_a_tasks_sweep_replays_target_only_once(tmp_path):
    """The tasks job shares the sweep's target-only store like replay: one job replays, the other reuses."""
    db = tmp_path / "t.db"
    res = run_cli("-m", "experiment=tasks", "dataset.n_windows=4", "model.budget=1,3", "budget_from=model",
                  "device=k70_pro", "methods=[target_only,as2d]", f"tracking.uri=sqlite:///{db}",
                  f"hydra.sweep.dir={tmp_path}/sweep")
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.count("target-only on k70_pro: replayed here") == 1
    assert res.stdout.count("target-only on k70_pro: reused ") == 1


def test_the_console_judges_each_d3_number_by_its_own_goal(capsys) -> None:
    from workbench.run import print_checks

    print_checks({"agreement.mae_pct": 4.9, "agreement.pooled_error_pct": -3.45,
                  "agreement.target_only_mae_pct": 3.2})
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "replay vs native agreement, As²d per-window MAE: 4.90% -> PASS (goal <= 5%)",
        "replay vs native agreement, signed pooled error: -3.45% -> FAIL (goal within +-2%)",
        "replay vs native agreement, target-only per-window MAE: 3.20% -> FAIL (goal <= 3%)",
    ]
    print_checks({"agreement.pooled_error_pct": 1.9})  # a job that measured only some of them says only those
    out = capsys.readouterr().out
    assert out == "replay vs native agreement, signed pooled error: +1.90% -> PASS (goal within +-2%)\n"
