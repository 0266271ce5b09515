"""Table 3 from a job (D.1.2, D.4.4): the tasks job prices the Omni-7B/3B pair with K70's own cost block.

As²d runs at the pair's deployed b = 3 (K <= 4), SD at width 8 and SpecASR capped at 7 (budget 7,
K <= 8); TPS counts useful tokens only (no EOS, no first token chosen in prefill), and a device
without an Omni block is refused instead of pricing Omni at its ASR target's costs.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from workbench.jobs import tasks
from workbench.jobs.base import ConfigError
from workbench.jobs.config import devices
from workbench.replay.profile import load_profile

CONF = Path(__file__).resolve().parents[2] / "conf"


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        return compose("config", overrides=["experiment=tasks", "dataset.n_windows=6", *overrides])


def test_tasks_job_regenerates_table3_under_the_omni_block(tmp_path: Path) -> None:
    cfg = _cfg()
    tasks.validate(cfg)
    (omni,) = devices(cfg)
    assert omni.file.endswith("#targets.qwen2_5_omni") and omni.target_step_ms != load_profile("k70_pro").target_step_ms
    res = tasks.run(cfg, tmp_path)
    t3, rounds, win = res.tables["table3"], res.tables["rounds"], res.tables["windows"]
    widest = dict(rounds.group_by("method").agg(pl.col("width").max()).rows())
    assert widest["as2d"] <= 4 and widest["sd"] == 8 and widest["asp"] <= 8
    assert res.tables["device_budgets"]["budget"].to_list() == [3]
    # TPS over useful tokens, recomputed from the windows frame: tokens - first - EOS over the same time
    for row in t3.iter_rows(named=True):
        g = win.filter((pl.col("dataset") == row["dataset"]) & (pl.col("method") == row["method"]))
        assert row["tps_useful"] == pytest.approx((g["tokens"] - 2).sum() / g["time"].sum(), rel=1e-9)
        assert row["tps_useful"] < (g["tokens"].sum() / g["time"].sum())
    to = t3.filter(pl.col("method") == "target_only")
    assert (to["tps_useful"] < 1000 / omni.target_step_ms).all() and to["acceptance"].is_nan().all()
    as2d = t3.filter(pl.col("method") == "as2d")
    assert ((as2d["coverage"] > 0) & (as2d["k_gt1_share"] > 0) & as2d["gain_pct"].is_not_null()).all()
    assert "table3" in res.figures


def test_a_device_without_an_omni_block_is_refused() -> None:
    with pytest.raises(ConfigError, match="no cost block for model 'qwen2_5_omni'"):
        devices(_cfg("device=xiaomi_14"))
