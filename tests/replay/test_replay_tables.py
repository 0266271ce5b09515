"""The replay job logs Table 10 (work_by_config) and Table 11 (regime_changes) with its other tables."""

from __future__ import annotations

import statistics
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from workbench.jobs import replay as replay_job

CONF = Path(__file__).resolve().parents[2] / "conf"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        c = compose("config", overrides=["experiment=sd_widths", "methods=[target_only,sd]", "dataset.n_windows=6"])
    replay_job.validate(c)
    return replay_job.run(c, tmp_path_factory.mktemp("replay"))


def test_work_by_config_keeps_sd_k8_and_k12_apart_and_accounts_every_token(result) -> None:
    work, windows = result.tables["work_by_config"], result.tables["windows"]
    allrows = work.filter(pl.col("dataset") == "all")
    assert set(allrows["config"]) == set(windows["config"]) and len(set(windows["config"])) == 3
    for cfg, tokens, time in allrows.select("config", "tokens", "time").iter_rows():
        subset = windows.filter(pl.col("config") == cfg)
        assert tokens == subset["tokens"].sum() and time == pytest.approx(subset["time"].sum())
    rounds = result.tables["rounds"]
    for cfg, n in allrows.select("config", "rounds").iter_rows():
        assert n == rounds.filter(pl.col("config") == cfg).height


def test_regime_changes_are_the_median_per_window_change_over_target_only(result) -> None:
    t = result.tables["regime_changes"]
    w = result.tables["windows"]
    assert set(t["method"]) == {"sd"}  # the baseline itself is not a row
    row = t.row(0, named=True)
    subset = w.filter(pl.col("dataset") == row["dataset"])
    base = {r["window_id"]: r["tokens"] / r["time"] for r in subset.filter(pl.col("method") == "target_only")
            .iter_rows(named=True)}
    sd: dict[str, list[float]] = {}  # SD's K8 and K12 TPS averaged within each window first (D.1.3)
    for r in subset.filter(pl.col("method") == "sd").iter_rows(named=True):
        sd.setdefault(r["window_id"], []).append(r["tokens"] / r["time"])
    changes = [100 * (statistics.mean(v) / base[k] - 1) for k, v in sd.items()]
    assert row["windows"] == len(changes)
    assert row["median_pct"] == pytest.approx(statistics.median(changes), rel=1e-9)


def test_the_replay_run_carries_table6_for_its_phone(result) -> None:
    t = result.tables["device_metadata"]  # experiment=sd_widths replays on k70_pro
    assert t.columns == ["attribute", "Redmi K70 Pro"]
    row = dict(zip(t["attribute"], t["Redmi K70 Pro"], strict=True))
    assert row["Model ID"] == "23117RK66C" and row["Proposal budget b"] == "7"
