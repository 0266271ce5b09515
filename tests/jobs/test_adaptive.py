"""Job ``adaptive`` in-process: the per-device table against independent expectations, and the job as glue."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from hydra import compose, initialize_config_dir

from workbench.jobs import adaptive
from workbench.jobs.base import ConfigError
from workbench.jobs.config import method_settings
from workbench.replay import adaptive as A
from workbench.replay.engine import replay
from workbench.replay.profile import load_profile
from workbench.replay.result import ReplayConfig

ROOT = Path(__file__).resolve().parents[2]


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        return compose("config", overrides=["experiment=adaptive", *overrides])


def test_the_table_has_every_method_and_honest_reference_rows():
    cfg = _cfg("dataset.n_windows=12", "devices=[xiaomi_14]", "budgets=[1,3,5,7]")
    adaptive.validate(cfg)
    windows = adaptive.cached_windows(cfg)
    table, chosen = adaptive.device_table(windows, load_profile("xiaomi_14"), cfg)
    rows = {r["method"]: r for r in table.iter_rows(named=True)}
    assert tuple(rows) == A.ORDER
    t = rows["target_only"]
    # Target-only by hand on the test split: one plain step per token after the prefill's.
    test = [w for w in windows if w.window_id in _test_ids(cfg, windows)]
    step_s = load_profile("xiaomi_14").target_step_ms / 1000.0
    tokens = sum(len(w.reference) for w in test)
    assert t["tps"] == pytest.approx(tokens / sum((len(w.reference) - 1) * step_s for w in test))
    assert t["slower_than_target"] == 0.0 and t["test_windows"] == len(test)
    # The oracle is the per-window best of a catalog that holds the fixed choice: it is never beaten by it.
    assert rows["as2d_fixed"]["oracle_gap"] >= -1e-12 and rows["as2d_fixed"]["vs_fixed"] == 0.0
    assert rows["as2d_fixed"]["config"] == f"as2d/{chosen['source']}/b{chosen['budget']}"
    # The online methods start from the dev split's pooled slot acceptance, at a weight from the grid.
    assert 0.0 < chosen["prior"] <= 1.0
    assert set(chosen["dev_choice"]) == {"as2d_online", "as2d_sources", "as2d_adaptive"}
    assert {c["prior_rounds"] for c in chosen["dev_choice"].values()} <= {float(k) for k in cfg.adaptive.prior_rounds}
    assert chosen["dev_choice"]["as2d_adaptive"]["hybrid"] in (True, False)  # drafting at all is chosen on dev
    assert chosen["dev_choice"]["as2d_adaptive"]["guess"] in (True, False)  # so is the substitution guess
    # One strong oracle per device: every row's two shares differ by the same factor (the two oracles' ratio).
    ratios = {r["of_strong_oracle"] / r["of_oracle"] for r in rows.values()}
    assert max(ratios) - min(ratios) < 1e-9
    # The source hindsight holds the online budget's own source.
    assert rows[A.SOURCE_HINDSIGHT]["tps"] >= rows["as2d_online"]["tps"] * (1 - 1e-12)
    assert rows["as2d_adaptive"]["config"] is not None
    # The resident-choice hindsight by hand: per test window, the faster of the online budget reading each
    # resident source first while the others keep producing beside it.
    resident = chosen["resident"]["as2d_adaptive"].split("+")
    profile = load_profile("xiaomi_14")
    online = {**method_settings(cfg, "as2d_online"), "budget": chosen["bound"], "prior": chosen["prior"],
              **chosen["dev_choice"]["as2d_online"]}
    orders = ["+".join([s, *(r for r in resident if r != s)]) for s in resident]
    best = [min(replay(w, ReplayConfig("as2d_online", source=o, **online), profile).summary()["time"] for o in orders)
            for w in test]
    assert rows[A.RESIDENT_HINDSIGHT]["tps"] == pytest.approx(tokens / sum(best), rel=1e-12)
    assert rows[A.RESIDENT_HINDSIGHT]["config"] == f"min({', '.join(f'as2d_online/{o}' for o in orders)})"
    # The resident set is one of the candidates, the fixed source first.
    for name in ("as2d_sources", "as2d_adaptive"):
        assert chosen["resident"][name] in A.resident_sets(chosen["source"], ["qwen", "parakeet", "sensevoice"])
        assert rows[name]["config"].startswith(f"{name}/{chosen['resident'][name]}/b")


def _test_ids(cfg, windows) -> set[str]:
    from workbench.replay.selection import split_windows

    n_dev = max(1, round(len(windows) * cfg.dataset.dev_fraction))
    return {w.window_id for w in split_windows(windows, n_dev, seed=int(cfg.seed))[1].windows}


def test_resident_sets_by_hand():
    assert A.resident_sets("qwen", ["qwen", "parakeet", "sensevoice"]) == [
        "qwen", "qwen+parakeet", "qwen+sensevoice", "qwen+parakeet+sensevoice"]
    assert A.resident_sets("a", ["a", "b"]) == ["a", "a+b"]


def test_slot_acceptance_by_hand():
    def rec(chain, accepted):
        return SimpleNamespace(chain=chain, accepted=accepted)

    # Slots tried: min(a + 1, n) -> 2 (chain of 3, 1 accepted) + 2 (chain of 2, both) = 4; accepted 3.
    runs = [SimpleNamespace(records=[rec((1, 2, 3), 1), rec((), 0)]), SimpleNamespace(records=[rec((4, 5), 2)])]
    assert A.slot_acceptance(runs) == pytest.approx(0.75)


@pytest.mark.parametrize("weights", ["[]", "[0,3]"])
def test_a_bad_prior_weight_grid_is_named(weights):
    with pytest.raises(ConfigError, match="adaptive.prior_rounds"):
        adaptive.validate(_cfg(f"adaptive.prior_rounds={weights}"))


def test_a_bad_bound_is_named():
    with pytest.raises(ConfigError, match="adaptive.bound"):
        adaptive.validate(_cfg("adaptive.bound=widest"))


def test_the_native_comparison_is_not_labelled_synthetic():
    # It runs the demo audio whatever `dataset` says; the replay tables replay the dataset.
    assert adaptive.replays_dataset(_cfg()) and not adaptive.replays_dataset(_cfg("adaptive.native=true"))
