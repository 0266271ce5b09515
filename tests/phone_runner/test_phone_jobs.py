"""The full path on the loopback phone through Hydra and a real MLflow store:
discover -> info -> calibrate -> run -> records -> audits -> MLflow, plus the mid-run faults."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import mlflow
import polars as pl
import pytest
import yaml
from hydra import compose, initialize_config_dir

from phone_runner.hostrun import DeviceLost
from phone_runner.testing.loopback import LoopbackDevice, start_loopback
from workbench.errors import ConfigError
from workbench.replay.profile import load_profile
from workbench.run import execute

CONF = Path(__file__).resolve().parents[2] / "conf"


def job_cfg(tmp: Path, experiment: str, *over: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=[
            f"experiment={experiment}", f"tracking.uri=sqlite:///{tmp}/mlflow.db", f"out_dir={tmp}/out",
            f"phone.state_dir={tmp}/state", "phone.conditions.rest_s=0", "device=k70_pro", "dataset=synthetic",
            "dataset.n_windows=3", "dataset.mean_tokens=40", *over])


def _artifacts(tmp: Path, run_id: str) -> set[str]:
    client = mlflow.MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    out: set[str] = set()
    todo = [None]
    while todo:
        for a in client.list_artifacts(run_id, todo.pop()):
            (todo.append(a.path) if a.is_dir else out.add(a.path))
    return out


def runs(tmp: Path) -> list:
    mlflow.set_tracking_uri(f"sqlite:///{tmp}/mlflow.db")
    found = mlflow.search_runs(search_all_experiments=True, output_format="list")
    return [r for r in found if r.data.tags.get("as2d.role") != "config"]  # job runs, not per-config children


def test_info_calibrate_and_native_runs_land_in_mlflow(loopback: LoopbackDevice, tmp_path: Path) -> None:
    res = execute(job_cfg(tmp_path, "phone_info"))
    row = res.tables["table6"].row(0, named=True)
    assert row["device"] == "Loopback K70" and row["soc"] == "SM8550" and row["cores"] == 8
    assert row["cpu"] == "3x2.02GHz + 4x2.80GHz + 1x3.19GHz"

    cal = ("phone.name=loopback_cal", f"phone.profile_dir={tmp_path}/profiles", "phone.calibrate.reps=2")
    with pytest.raises(ConfigError, match="protocol check, not a measurement.*write_protocol_check=true"):
        execute(job_cfg(tmp_path, "calibrate_phone", *cal))  # the reference engine measures nothing
    assert not (tmp_path / "profiles").exists()
    res = execute(job_cfg(tmp_path, "calibrate_phone", *cal, "phone.write_protocol_check=true"))
    written = load_profile(tmp_path / "profiles/loopback_cal.yaml")  # valid profile schema
    base = load_profile("k70_pro")
    for k in written.verifier.idle_ms:  # the reference engine echoes the base costs it was given
        assert written.verify_ms(k) == pytest.approx(base.verify_ms(k), rel=1e-5)
    text = (tmp_path / "profiles/loopback_cal.yaml").read_text()
    raw = yaml.safe_load(text)
    assert "protocol check on Loopback K70" in raw["verifier"]["idle_ms"][1]["source"]
    assert "measured on" not in text and raw["description"].startswith("source: protocol check")
    assert "n=6" in raw["verifier"]["idle_ms"][1]["source"]  # 2 repetitions x 3 prefix offsets
    assert res.tags["profile_kind"] == "protocol check"
    (cal_run,) = [r for r in runs(tmp_path) if r.data.tags.get("job") == "calibrate_phone"]
    assert "SYNTHETIC" not in cal_run.data.tags and cal_run.data.tags["synthetic"] == "False"
    arts = _artifacts(tmp_path, cal_run.info.run_id)
    assert {"phone/loopback_cal.yaml", "phone/calibrate.jsonl"} <= arts  # the profile and the raw lines

    res = execute(job_cfg(tmp_path, "native_phone", "phone.engine.clock=virtual", "methods=[target_only,as2d,asp]",
                          "phone.repetitions=2"))
    assert res.metrics["exactness_mismatches"] == 0 and res.metrics["flagged_windows"] == 0
    tps = {}
    for row in res.summary.iter_rows(named=True):
        # virtual clock: the phone pipeline reproduces replay exactly, so agreement is 0 %
        assert res.metrics[f"phone.{row['method']}.agreement_mae_pct"] == pytest.approx(0.0, abs=1e-9)
        # the virtual clock repeats a window exactly: its median has no noise to allow for
        assert res.metrics[f"phone.{row['method']}.agreement_noise_floor_pct"] == 0.0
        tps[row["method"].split("/")[0]] = row["tps"]
    assert set(tps) == {"target_only", "as2d", "asp"} and tps["as2d"] > tps["target_only"]
    # D.3 per window (the table the MAE is the mean of): native median beside its replay, every config
    agree = pl.read_parquet(tmp_path / "out/tables/agreement.parquet")
    assert agree.height == res.summary.height * int(res.metrics["windows"])
    assert agree["time_native"].to_list() == pytest.approx(agree["time_replay"].to_list(), rel=1e-9)
    done = [r for r in runs(tmp_path) if r.data.tags.get("job") == "native_phone"]
    assert [r.info.status for r in done] == ["FINISHED"]
    assert done[0].data.tags["serial_hash"] == res.tags["serial_hash"] != "LOOPBACK0001"
    # the runner's output of each configuration, as pulled from the phone, is logged with the run
    raw = {f"phone/{m.replace('/', '_')}.jsonl" for m in res.summary["method"]}
    assert len(raw) == 3 and raw <= _artifacts(tmp_path, done[0].info.run_id)
    (tmp_path / "got").mkdir()
    got = mlflow.MlflowClient(f"sqlite:///{tmp_path}/mlflow.db").download_artifacts(
        done[0].info.run_id, "phone/target_only.jsonl", str(tmp_path / "got"))
    assert Path(got).read_bytes() == (tmp_path / "out/phone/target_only.jsonl").read_bytes()
    assert (tmp_path / "out/tables/rounds.parquet").exists()
    assert pl.read_parquet(tmp_path / "out/tables/monitor.parquet").height >= 0


def test_phone_info_is_not_tagged_synthetic(loopback: LoopbackDevice, tmp_path: Path) -> None:
    """phone_info reads the phone, never the (here synthetic) dataset: its run is not SYNTHETIC."""
    execute(job_cfg(tmp_path, "phone_info"))
    (info,) = runs(tmp_path)
    assert info.data.tags["job"] == "phone_info" and info.info.status == "FINISHED"
    assert "SYNTHETIC" not in info.data.tags and info.data.tags["synthetic"] == "False"


def _when_stored(state: Path, n: int, action, timeout: float = 60.0) -> threading.Thread:
    def watch() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(list(state.rglob("*.jsonl"))) >= n:
                action()
                return
            time.sleep(0.02)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


def test_unplugged_mid_run_fails_the_mlflow_run_keeps_windows_and_resumes(adb_server: int, tmp_path: Path) -> None:
    root = tmp_path / "phone"
    phone = start_loopback(root, adb_server)
    over = ("phone.engine.clock=real", "methods=[as2d]")
    watcher = _when_stored(tmp_path / "state", 1, phone.stop)
    try:
        with pytest.raises(DeviceLost, match="finished window"):
            execute(job_cfg(tmp_path, "native_phone", *over))
    finally:
        watcher.join(5)
        phone.stop()
        phone.disconnect(adb_server)
    (failed,) = runs(tmp_path)
    assert failed.info.status == "FAILED" and not failed.data.metrics  # nothing half-written
    kept = len(list((tmp_path / "state").rglob("*.jsonl")))
    assert 1 <= kept < 3
    again = start_loopback(root, adb_server)  # plugged in again (new port, same phone)
    try:
        res = execute(job_cfg(tmp_path, "native_phone", *over))
    finally:
        again.stop()
        again.disconnect(adb_server)
    assert res.metrics["resumed_windows"] == kept
    assert res.tables["windows"].height == 3 and res.metrics["exactness_mismatches"] == 0


def test_a_core_going_offline_mid_run_is_recorded_and_flags_windows(adb_server: int, tmp_path: Path) -> None:
    phone = start_loopback(tmp_path / "phone", adb_server)
    watcher = _when_stored(tmp_path / "state", 1, lambda: phone.set_online(5, False))
    try:
        res = execute(job_cfg(tmp_path, "native_phone", "phone.engine.clock=real", "methods=[target_only]"))
    finally:
        watcher.join(5)
        phone.stop()
        phone.disconnect(adb_server)
    monitor = res.tables["monitor"]
    assert monitor.filter(pl.col("violations").str.contains(r"cores offline: \[5\]")).height >= 1
    flags = res.tables["windows"].sort("window_id")["condition_flag"].to_list()
    assert flags[-1].startswith("cores offline") and res.metrics["flagged_windows"] >= 1
    assert res.metrics["exactness_mismatches"] == 0  # flagged, not dropped
    assert res.tables["windows"].height == 3


@pytest.mark.parametrize("value", ["3", "maybe"])
def test_the_producer_probe_switch_is_a_boolean_or_one_config_error(tmp_path: Path, value: str) -> None:
    """``phone.producer_probe`` (off by default: its As²d runs sit between the rest and the configuration)
    accepts true or false; anything else is one line naming the key, before a phone is looked for."""
    from workbench.jobs.phone_checks import validate

    assert job_cfg(tmp_path, "native_phone").phone.producer_probe is False
    with pytest.raises(ConfigError, match="phone.producer_probe.*true or false"):
        validate(job_cfg(tmp_path, "native_phone", f"phone.producer_probe={value}"))
