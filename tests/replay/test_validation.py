"""D.2.6's validation stage: screen on dev, confirm the shortlist on validation, freeze before test."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from workbench.jobs import oracle as oracle_job
from workbench.jobs.base import ConfigError
from workbench.jobs.windows import load_windows
from workbench.replay.engine import ReplayConfig, replay
from workbench.replay.profile import load_profile
from workbench.replay.selection import (
    ValidationSplit,
    confirm_budget,
    select_budget,
    split_three,
    split_windows,
    splits_from_labels,
)
from workbench.replay.synthetic import SourceSpec, SyntheticSpec, synthetic_windows

CONF = Path(__file__).resolve().parents[2] / "conf"
BUDGETS = (1, 2, 4, 7, 10)


@pytest.fixture(scope="module")
def windows():
    # One qwen source, eligible everywhere: no fallback, so pooled TPS can be recomputed by hand.
    return synthetic_windows(SyntheticSpec(n_windows=16, sources=(SourceSpec("qwen"),), seed=5))


def test_three_way_split_keeps_the_dev_split_and_takes_validation_from_test(windows) -> None:
    dev, val, test = split_three(windows, n_dev=4, n_validation=5, seed=3)
    dev2, test2 = split_windows(windows, n_dev=4, seed=3)
    assert dev.ids == dev2.ids and val.ids | test.ids == test2.ids
    assert not val.ids & test.ids and (len(dev), len(val), len(test)) == (4, 5, 7)
    with pytest.raises(ValueError, match="leave test windows"):
        split_three(windows, n_dev=8, n_validation=8)


def test_each_stage_takes_only_its_own_split(windows) -> None:
    prof = load_profile("k70_pro")
    dev, val, test = split_three(windows, n_dev=4, n_validation=5)
    with pytest.raises(TypeError, match="DevSplit"):
        select_budget(val, prof, ["qwen"], BUDGETS)
    sel = select_budget(dev, prof, ["qwen"], BUDGETS)
    for bad in (dev, test, list(val.windows)):
        with pytest.raises(TypeError, match="ValidationSplit"):
            confirm_budget(sel, bad, prof)
    with pytest.raises(TypeError, match="split_windows"):
        ValidationSplit(tuple(windows), 0)


def test_confirmation_ranks_the_dev_shortlist_by_pooled_validation_tps(windows) -> None:
    prof = load_profile("xiaomi_11_pro")
    dev, val, _ = split_three(windows, n_dev=4, n_validation=6, seed=1)
    sel = select_budget(dev, prof, ["qwen"], BUDGETS)
    conf = confirm_budget(sel, val, prof, shortlist=3)
    assert conf.table["budget"].to_list() != [] and conf.table.height == 3
    # The shortlist is the dev screen's top three, in any order.
    assert set(conf.table["budget"]) == set(sel.table.head(3)["budget"])
    for b, vtps in conf.table.select("budget", "validation_tps").iter_rows():
        rs = [replay(w, ReplayConfig("as2d", source="qwen", budget=b), prof) for w in val.windows]
        assert vtps == pytest.approx(sum(r.tokens for r in rs) / sum(r.time for r in rs), rel=1e-12)
    assert conf.validation_tps == conf.table["validation_tps"].max()
    assert conf.screened == (sel.source, sel.budget)
    assert conf.retained == ((conf.source, conf.budget) == conf.screened)


def test_splits_from_a_cohort_manifest(windows) -> None:
    names = ["dev", "validation", "test", "calibration"]
    labels = {w.window_id: names[i % 4] for i, w in enumerate(windows)}
    dev, val, test = splits_from_labels(windows, labels)
    assert (len(dev), len(val), len(test)) == (4, 4, 4)  # calibration windows stay out
    assert all(labels[i] == "validation" for i in val.ids)
    with pytest.raises(ValueError, match="not in the cohort manifest"):
        splits_from_labels(windows, dict(list(labels.items())[1:]))
    with pytest.raises(ValueError, match="no validation windows"):
        splits_from_labels(windows, {k: ("test" if v == "validation" else v) for k, v in labels.items()})


def cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=["experiment=oracle", "dataset.n_windows=12", "budgets=[2,3,7]",
                                            "workers=1", *overrides])


def test_oracle_job_confirms_on_validation_and_freezes_before_test() -> None:
    c = cfg("validation_fraction=0.25")
    oracle_job.validate(c)
    ws, prof = load_windows(c), load_profile("k70_pro")
    metrics, tables, row = oracle_job.select_and_oracle(ws, prof, c)
    assert (row["dev_windows"], row["validation_windows"], row["test_windows"]) == (3, 3, 6)
    v = tables["validation_k70_pro"]
    best = v.row(0, named=True)
    assert row["selected"] == f"{best['source']}/b{best['budget']}"  # the frozen pair is validation's pick
    # The test-side report prices exactly the frozen pair on the test windows only.
    per = tables["oracle_k70_pro"]
    assert per.height == 6 and metrics["k70_pro.validation_tps"] == best["validation_tps"]
    # Without a validation share, the job keeps the dev pick (no validation table).
    _, t0, row0 = oracle_job.select_and_oracle(ws, prof, cfg())
    assert "validation_k70_pro" not in t0 and "validation_windows" not in row0


def test_oracle_job_uses_the_cohorts_own_validation_split() -> None:
    c = cfg()
    ws = load_windows(c)
    names = ["dev", "validation", "test", "test"]
    labels = {w.window_id: names[i % 4] for i, w in enumerate(ws)}
    _, tables, row = oracle_job.select_and_oracle(ws, load_profile("k70_pro"), c, labels=labels)
    assert (row["dev_windows"], row["validation_windows"], row["test_windows"]) == (3, 3, 6)
    assert set(tables["oracle_k70_pro"]["window_id"]) == {k for k, v in labels.items() if v == "test"}


def test_a_validation_share_that_leaves_no_test_windows_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="^validation_fraction: "):
        oracle_job.validate(cfg("validation_fraction=0.8"))
