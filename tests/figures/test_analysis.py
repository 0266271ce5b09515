"""The paper's table rules on tiny hand-made frames (no MLflow)."""

from __future__ import annotations

import math

import polars as pl
import pytest

from workbench.figures import analysis as A
from workbench.figures import paper_values as PV
from workbench.figures.runs import NoRuns, find_runs


def _per(rows: list[tuple[str, str, float, int]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=["method", "window_id", "tps", "tokens"], orient="row").with_columns(
        pl.lit("dev").alias("device"), pl.lit("libri").alias("dataset"))


def test_slowdowns_count_ties_as_neither_and_measure_loss_among_slower() -> None:
    per = _per([("target_only", "a", 10.0, 100), ("target_only", "b", 10.0, 100), ("target_only", "c", 10.0, 100),
                ("as2d", "a", 8.0, 100), ("as2d", "b", 10.0 * (1 + 1e-12), 100), ("as2d", "c", 5.0, 100)])
    row = A.slowdowns(per).row(0, named=True)
    assert (row["faster"], row["slower"]) == (0, 2)  # b is a numerical tie (D.4.5)
    assert row["median_loss_pct"] == pytest.approx(35.0) and row["max_loss_pct"] == pytest.approx(50.0)


def test_representative_window_is_nearest_the_median_gain_and_skips_short_windows() -> None:
    rows = []
    for wid, gain, tokens in (("w1", 1.0, 100), ("w2", 2.0, 100), ("w3", 4.0, 100), ("w0", 2.0, 10)):
        rows += [("target_only", wid, 10.0, tokens), ("sd", wid, 5.0, tokens), ("asp", wid, 4.0, tokens),
                 ("as2d", wid, 5.0 * gain, tokens)]
    picked = A.representative_windows(_per(rows)).row(0, named=True)
    assert picked["window_id"] == "w2"  # w0 ties on gain but is under 64 tokens
    assert picked["gain_pct"] == pytest.approx(100.0)


def test_pooled_by_dataset_pools_per_config_then_averages_sd_widths() -> None:
    w = pl.DataFrame({"device": ["d"] * 4, "method": ["sd"] * 4, "config": ["sd/K5", "sd/K5", "sd/K8", "sd/K8"],
                      "window_id": ["a", "b", "a", "b"], "dataset": ["x"] * 4, "tokens": [10, 30, 10, 30],
                      "time": [1.0, 1.0, 2.0, 2.0]})
    tps = A.pooled_by_dataset(w).filter(pl.col("dataset") == "all")["tps"].item()
    assert tps == pytest.approx((40 / 2 + 40 / 4) / 2)


def test_batching_saving_is_eq2_and_oracle_gap_pools() -> None:
    r = A.batching_saving({1: 10.0, 4: 20.0})
    assert r.filter(pl.col("K") == 4)["saving_pct"].item() == pytest.approx(50.0)
    o = pl.DataFrame({"device": ["d", "d"], "tokens": [10, 30], "selected_time": [2.0, 2.0], "oracle_time": [1.0, 2.0]})
    assert A.oracle_shortfall(o)["gap_pct"].item() == pytest.approx(100 * (1 - (40 / 4) / (40 / 3)))


def test_paper_values_carry_provenance_and_match_the_text() -> None:
    t8 = PV.table8()
    assert set(t8["provenance"]) == {PV.PAPER} and t8.filter(pl.col("source").is_null()).height == 0
    k70 = t8.filter((pl.col("device") == "k70_pro") & (pl.col("method") == "as2d") & (pl.col("dataset") == "all"))
    assert k70["tps"].item() == 27.92
    gap = PV.table2().filter((pl.col("device") == "k70_pro") & (pl.col("dataset") == "all"))["gap_pct"].item()
    assert gap == pytest.approx(2.17, abs=0.01)
    assert not math.isnan(PV.table12()["slower_pct"].sum())


def test_find_runs_on_a_missing_store_is_one_clear_line(tmp_path) -> None:
    uri = f"sqlite:///{tmp_path / 'none.db'}"
    with pytest.raises(NoRuns) as err:
        find_runs("as2d-replay", uri=uri)
    msg = str(err.value)
    assert "\n" not in msg and "as2d-replay" in msg and "experiment=replay" in msg
    assert not (tmp_path / "none.db").exists()  # looking must not create a store
