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
    FULL_GRID,
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


def test_the_full_grid_is_ranked_in_the_order_of_its_replayed_validation_tps() -> None:
    # Two sources, parakeet language-ineligible on some windows: those windows fall back to qwen (D.2.6).
    ws = synthetic_windows(SyntheticSpec(n_windows=14, seed=11, sources=(
        SourceSpec("qwen"), SourceSpec("parakeet", acceptance=0.8, chunk_tokens=6.0, confidence=False, eligible=0.6))))
    assert any(not w.sources["parakeet"].eligible for w in ws)
    prof = load_profile("redmi_note_9_pro")
    dev, val, _ = split_three(ws, n_dev=4, n_validation=6, seed=2)
    sel = select_budget(dev, prof, ["qwen", "parakeet"], BUDGETS)
    conf = confirm_budget(sel, val, prof, shortlist=FULL_GRID)
    grid = {(s, b) for s in ("qwen", "parakeet") for b in BUDGETS}
    assert conf.table.height == len(grid) and set(conf.table.select("source", "budget").rows()) == grid
    replayed = {}
    for s, b in grid:  # recomputed by hand: each window replayed alone, ineligible parakeet -> qwen
        rs = [replay(w, ReplayConfig("as2d", source=s if w.sources[s].eligible else "qwen", budget=b), prof)
              for w in val.windows]
        replayed[(s, b)] = sum(r.tokens for r in rs) / sum(r.time for r in rs)
    order = sorted(replayed, key=lambda k: (-replayed[k], k[1], k[0]))
    assert conf.table.select("source", "budget").rows() == order
    assert conf.table["validation_rank"].to_list() == list(range(1, len(grid) + 1))
    assert conf.table["validation_tps"].to_list() == pytest.approx([replayed[k] for k in order], rel=1e-12)
    assert (conf.source, conf.budget) == order[0]
    # dev ranks come from the screen's own order
    dev_order = sel.table.select("source", "budget").rows()
    assert all(dev_order[r - 1] == (s, b) for s, b, r in conf.table.select("source", "budget", "dev_rank").iter_rows())


def test_the_oracle_job_ranks_the_full_grid_when_the_shortlist_is_null() -> None:
    c = cfg("validation_fraction=0.3", "validation_shortlist=null", "device=redmi_note_9_pro")
    oracle_job.validate(c)
    metrics, tables, _ = oracle_job.select_and_oracle(load_windows(c), load_profile("redmi_note_9_pro"), c)
    n_sources = tables["dev_budgets_redmi_note_9_pro"]["source"].n_unique()
    grid = tables["validation_redmi_note_9_pro"]
    assert grid.height == 3 * n_sources == metrics["redmi_note_9_pro.validation_settings"]
    assert grid["validation_tps"].to_list() == sorted(grid["validation_tps"], reverse=True)
    with pytest.raises(ConfigError, match="^validation_shortlist: "):
        oracle_job.validate(cfg("validation_shortlist=0"))
