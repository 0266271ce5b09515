"""Per-device budgets (A.2, D.2.6): a multi-device replay runs each phone at its own deployed budget.

The child runs of one two-device replay carry different ``budget`` params (K70 Pro b = 7, Note 9 Pro
b = 3, from the profiles), a Hydra override moves one device only, an override nothing would use is
refused before any run, and the oracle prices each device's deployed pair beside the dev-selected one.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from workbench.jobs.base import ConfigError
from workbench.jobs.budgets import check_device_budgets, device_budget
from workbench.jobs.config import devices
from workbench.replay.profile import load_profile

from .test_run import CONF, run_cli, runs


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        return compose("config", overrides=list(overrides))


def test_budget_rule_profile_then_override_then_model():
    cfg = _cfg("experiment=replay", "+devices=[k70_pro,redmi_note_9_pro,xiaomi_14]", "device_budgets.xiaomi_14=5")
    got = {p.name: device_budget(cfg, p) for p in devices(cfg)}
    assert got == {"k70_pro": 7, "redmi_note_9_pro": 3, "xiaomi_14": 5}
    # budget_from=model: model.budget everywhere except the device named in device_budgets
    cfg = _cfg("experiment=replay", "budget_from=model", "+devices=[k70_pro,xiaomi_14]", "device_budgets.xiaomi_14=5")
    assert {p.name: device_budget(cfg, p) for p in devices(cfg)} == {"k70_pro": 3, "xiaomi_14": 5}


def test_stray_or_unused_budget_overrides_are_one_config_error():
    for stray in ("device_budgets.xiaomi_14=4", "+device_budgets.pixel=4"):
        cfg = _cfg("experiment=replay", "+devices=[k70_pro]", stray)
        with pytest.raises(ConfigError, match=stray.lstrip("+").split("=")[0]):
            check_device_budgets(cfg, devices(cfg), overrides=[])
    cfg = _cfg("experiment=replay", "+devices=[k70_pro,redmi_note_9_pro]", "device_budgets.k70_pro=0")
    with pytest.raises(ConfigError, match=r"device_budgets\.k70_pro.*\[1, 24\]"):
        device_budget(cfg, load_profile("k70_pro"))
    cfg = _cfg("experiment=replay", "+devices=[k70_pro,redmi_note_9_pro]", "model.budget=5")
    with pytest.raises(ConfigError, match="budget_from=model") as err:
        check_device_budgets(cfg, devices(cfg), overrides=["model.budget=5"])
    assert "k70_pro" in str(err.value) and "redmi_note_9_pro" in str(err.value)
    check_device_budgets(_cfg("budget_from=model", "model.budget=5"), [load_profile("k70_pro")], ["model.budget=5"])


def test_two_device_replay_runs_each_device_at_its_own_budget(tmp_path: Path):
    db = tmp_path / "m.db"
    res = run_cli("experiment=replay", "dataset.n_windows=4", "+devices=[k70_pro,redmi_note_9_pro]",
                  "methods=[target_only,as2d]", f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={tmp_path}/out")
    assert res.returncode == 0, res.stderr[-2000:]
    children = {c.data.params["device"]: c for c in runs(db, "config") if c.data.params["method"] == "as2d"}
    assert {d: c.data.params["budget"] for d, c in children.items()} == {"k70_pro": "7", "redmi_note_9_pro": "3"}
    assert children["k70_pro"].info.run_name == "as2d-b7-k70_pro-replay-synthetic"
    assert children["redmi_note_9_pro"].info.run_name == "as2d-b3-redmi_note_9_pro-replay-synthetic"
    budgets = pl.read_parquet(tmp_path / "out" / "tables" / "device_budgets.parquet")
    assert budgets.sort("device").rows() == [("k70_pro", 7, "profile"), ("redmi_note_9_pro", 3, "profile")]
    # the widest verified round on Note 9 never exceeds its deployed K <= b + 1 = 4
    rounds = pl.read_parquet(tmp_path / "out" / "tables" / "rounds.parquet")
    widest = rounds.filter(pl.col("method") == "as2d").group_by("device").agg(pl.col("width").max())
    assert dict(widest.rows())["redmi_note_9_pro"] <= 4 < dict(widest.rows())["k70_pro"]


def test_a_hydra_override_moves_one_device_and_a_deaf_model_budget_is_refused(tmp_path: Path):
    db = tmp_path / "m.db"
    res = run_cli("experiment=replay", "dataset.n_windows=4", "+devices=[k70_pro,redmi_note_9_pro]",
                  "methods=[as2d]", "device_budgets.redmi_note_9_pro=5", f"tracking.uri=sqlite:///{db}",
                  f"hydra.run.dir={tmp_path}/out")
    assert res.returncode == 0, res.stderr[-2000:]
    got = {c.data.params["device"]: c.data.params["budget"] for c in runs(db, "config")}
    assert got == {"k70_pro": "7", "redmi_note_9_pro": "5"}
    res = run_cli("experiment=replay", "dataset.n_windows=4", "+devices=[k70_pro]", "model.budget=4",
                  f"tracking.uri=sqlite:///{tmp_path}/n.db", f"hydra.run.dir={tmp_path}/out2")
    assert res.returncode == 2
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("config error")]
    assert line.startswith("config error: model.budget:") and "budget_from=model" in line
    assert runs(tmp_path / "n.db") == []


def test_oracle_prices_each_devices_deployed_pair(tmp_path: Path):
    db = tmp_path / "m.db"
    res = run_cli("experiment=oracle", "dataset.n_windows=8", "budgets=[2,3,5]",
                  "+devices=[k70_pro,redmi_note_9_pro]", f"tracking.uri=sqlite:///{db}", f"out_dir={tmp_path}/out")
    assert res.returncode == 0, res.stderr[-2000:]
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["k70_pro.deployed_budget"] == 7 and m["redmi_note_9_pro.deployed_budget"] == 3
    for d in ("k70_pro", "redmi_note_9_pro"):
        per = pl.read_parquet(tmp_path / "out" / "tables" / f"oracle_{d}.parquet")
        # the oracle's per-window minimum is never slower than the deployed pair's time on a budget it searched
        tps = per["tokens"].sum() / per["deployed_time"].sum()
        assert m[f"{d}.tps_deployed"] == pytest.approx(tps)
        assert m[f"{d}.oracle_gap_deployed"] == pytest.approx(100 * (1 - tps / m[f"{d}.tps_oracle"]))
    # Note 9's deployed b = 3 is in the searched grid: the oracle is at least as fast on every window
    note9 = pl.read_parquet(tmp_path / "out" / "tables" / "oracle_redmi_note_9_pro.parquet")
    assert (note9["oracle_time"] <= note9["deployed_time"] + 1e-12).all()
    children = {c.data.params["device"]: c for c in runs(db, "config")}
    assert children["k70_pro"].data.params["deployed_budget"] == "7"
    assert children["redmi_note_9_pro"].data.params["deployed_budget"] == "3"
    # the deployed pair's TPS is the selection's verdict: on the device's selection run, not a configuration's
    selections = {s.data.params["device"]: s for s in runs(db, "selection")}
    note9_tps = selections["redmi_note_9_pro"].data.metrics["tps_deployed"]
    assert note9_tps == pytest.approx(m["redmi_note_9_pro.tps_deployed"])
