"""experiment=sensitivity: the oracle and the ablations re-priced under the nominal, low and high ratios."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml
from hydra import compose, initialize_config_dir

from workbench.jobs import oracle as oracle_job
from workbench.jobs import sensitivity
from workbench.jobs.base import ConfigError
from workbench.jobs.windows import load_windows
from workbench.replay.profile import load_profile

CONF = Path(__file__).resolve().parents[2] / "conf"
SMALL = ["experiment=sensitivity", "dataset.n_windows=6", "budgets=[2,3,7,12]", "workers=1", "device=k70_pro"]


def cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=[*SMALL, *overrides])


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory):
    c = cfg()
    sensitivity.validate(c)
    return c, sensitivity.run(c, tmp_path_factory.mktemp("sens"))


def test_nominal_scenario_is_the_oracle_job(result) -> None:
    c, res = result
    oracle = res.tables["sensitivity_oracle"]
    nominal = oracle.filter(pl.col("scenario") == "nominal").row(0, named=True)
    _, _, row = oracle_job.select_and_oracle(load_windows(c), load_profile("k70_pro"), c)
    assert nominal["selected"] == row["selected"]
    assert nominal["tps_selected"] == pytest.approx(row["tps"], rel=1e-12)
    assert nominal["tps_oracle"] == pytest.approx(row["tps_oracle"], rel=1e-12)
    # The deployment is frozen before any scenario (D.2.6): every scenario prices the same pair.
    assert oracle["selected"].n_unique() == 1
    assert oracle["scenario"].to_list() == ["nominal", "low", "high"]


def test_scenarios_use_the_profiles_stated_ratios(result) -> None:
    _, res = result
    raw = yaml.safe_load((CONF / "device" / "k70_pro.yaml").read_text())["verifier"]["concurrent"]
    for table in (res.tables["sensitivity_oracle"], res.tables["sensitivity_ablation"]):
        by = dict(zip(table["scenario"], table["ratio"], strict=False))
        assert by == {"nominal": raw["factor"]["v"], "low": raw["low"]["v"], "high": raw["high"]["v"]}


def test_only_overlapped_rounds_above_k8_move(result) -> None:
    _, res = result
    t = res.tables["sensitivity_ablation"]
    tps = {(r["scenario"], r["method"]): r["tps"] for r in t.iter_rows(named=True)}
    # Target-only and the serial arm never verify next to a running producer; As²d at budget 3 (K <= 4)
    # stays within the fixed K1-8 (D.4.3): no scenario moves them.
    for m in ("target_only", "as2d_wo_td", "as2d"):
        assert tps[("low", m)] == tps[("nominal", m)] == tps[("high", m)]
    # W/o BC verifies up to K25; K70's low bound equals its nominal factor (1.0), the high bound (1.049)
    # makes every overlapped round above K8 dearer (D.5.1: 25.60 -> 25.42 TPS on the phone cohort).
    m = "as2d_wo_bc"
    assert tps[("low", m)] == tps[("nominal", m)] and tps[("high", m)] < tps[("nominal", m)]
    high = t.filter((pl.col("scenario") == "high") & (pl.col("method") == m)).row(0, named=True)
    assert high["change_pct"] == pytest.approx(100 * (tps[("high", m)] / tps[("nominal", m)] - 1))
    o = res.tables["sensitivity_oracle"]
    nominal, hi = (o.filter(pl.col("scenario") == s).row(0, named=True) for s in ("nominal", "high"))
    assert hi["tps_oracle"] <= nominal["tps_oracle"]
    if nominal["selected"].endswith(("/b2", "/b3", "/b7")):  # a deployed K <= 8 is priced as before
        assert hi["tps_selected"] == nominal["tps_selected"]
    assert res.metrics["k70_pro.high.as2d_wo_bc.tps"] == tps[("high", m)]


def test_fixed_widths_keep_their_nominal_concurrent_cost() -> None:
    k70, x11 = load_profile("k70_pro"), load_profile("xiaomi_11_pro")
    hi = k70.scenario("high", fixed_up_to=8)
    assert hi.verify_ms(8, concurrent=True) == k70.verify_ms(8, concurrent=True)
    assert hi.verify_ms(9, concurrent=True) == pytest.approx(k70.verify_ms(9) * 1.049)
    assert k70.scenario("high").verify_ms(8, concurrent=True) == pytest.approx(k70.verify_ms(8) * 1.049)
    # Xiaomi 11 Pro: direct ratios at K1/5/8 always stay; K6 is extrapolated (median ratio 0.9651).
    lo = x11.scenario("low", fixed_up_to=8)
    assert lo.verify_ms(6, concurrent=True) == pytest.approx(x11.verify_ms(6) * 0.9651)
    assert lo.verify_ms(9, concurrent=True) == pytest.approx(x11.verify_ms(9) * 0.9387)
    assert x11.scenario("low").verify_ms(6, concurrent=True) == pytest.approx(x11.verify_ms(6) * 0.9387)
    assert lo.verify_ms(5, concurrent=True) == x11.verify_ms(5, concurrent=True)


@pytest.mark.parametrize("scenarios", ["[high]", "[nominal,medium]", "[nominal,low,low]"])
def test_bad_scenario_lists_are_one_config_error(scenarios: str) -> None:
    with pytest.raises(ConfigError, match="^scenarios: "):
        sensitivity.validate(cfg(f"scenarios={scenarios}"))


def test_a_profile_without_a_sensitivity_bound_is_refused_before_work(tmp_path: Path) -> None:
    raw = yaml.safe_load((CONF / "device" / "k70_pro.yaml").read_text())
    del raw["verifier"]["concurrent"]["high"]
    raw["name"] = "k70_no_high"
    path = tmp_path / "k70_no_high.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="^scenarios: .*no 'high' sensitivity ratio"):
        sensitivity.validate(cfg(f"+devices=[{path}]"))


def test_scenarios_price_the_pair_validation_froze(tmp_path: Path) -> None:
    c = cfg("validation_fraction=0.34", "scenarios=[nominal]", "methods=[target_only]", "dataset.n_windows=9")
    sensitivity.validate(c)
    res = sensitivity.run(c, tmp_path)
    _, _, row = oracle_job.select_and_oracle(load_windows(c), load_profile("k70_pro"), c)
    assert row["validation_windows"] == 3
    got = res.tables["sensitivity_oracle"].row(0, named=True)
    assert got["selected"] == row["selected"] and got["tps_selected"] == pytest.approx(row["tps"], rel=1e-12)
