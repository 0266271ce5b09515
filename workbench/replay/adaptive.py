"""Adaptive As²d against fixed As²d and the hindsight oracle on one device profile (beyond the paper, F.1/F.3).

On the development split (D.2.6): fix one (source, budget) as the paper does, and the resident source
set of the multi-source variants (the fixed source alone, with each other source, or with all; pooled
development TPS decides -- sources share the drafting workers, so more is not always better). Where the
online estimates start is a deployment choice too: the pooled slot acceptance fixed As²d saw on dev (the
drafter's: serial SD's), weighted as the ``prior_rounds`` entry that does best on dev; so are the
combination's parts that can cost as well as pay (hybrid candidates, the substitution guess).

Then on the test split: target-only, fixed As²d, each variant (the catalog's ``beyond_paper`` schemes), and
the per-window hindsight oracle over the fixed catalog (D.4.3); beside it the same oracle over a stronger
fixed catalog (``as2d_guarded`` with ``leave_eos``), so a gain those rules alone would give a fixed
configuration is not read as adaptation; and two hindsight rows that bound any online source choice
(``SOURCE_HINDSIGHT``, ``RESIDENT_HINDSIGHT``). ``goals`` judges the combination against per-device goals
the experiment config names (``conf/experiment/adaptive.yaml``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from workbench.decoding import CATALOG, scheme_spec
from workbench.decoding.schemes import MAX_BUDGET
from workbench.decoding.width import PRIOR, tried_slots

from .catalog import as2d_catalog, run_catalog
from .engine import replay, results_frame
from .multi_source import SEPARATOR
from .profile import DeviceProfile
from .result import ReplayConfig, ReplayResult
from .selection import hindsight_oracle, select_budget, split_windows
from .sources import priced_as, profile_source
from .trajectory import Window

# The variants compared, in catalog order: every scheme beyond the paper.
VARIANTS: tuple[str, ...] = tuple(n for n, s in CATALOG.items() if s.beyond_paper)
# Not a method: per window, the faster of the online budget on each source alone, chosen in hindsight. It
# bounds what any online source choice over those readers can reach (it pays no learning and shares no
# workers), so a gap it also shows is not the choice rule's.
SOURCE_HINDSIGHT = "online_source_hindsight"
# Not a method either: per window, the faster of the online budget reading each source of the combination's
# resident set while every resident producer runs (and shares the drafting workers). It bounds any choice rule
# over that set; where it sits far below SOURCE_HINDSIGHT, the shared workers, not the choice, cost the gap.
RESIDENT_HINDSIGHT = "resident_choice_hindsight"
ORDER = ("target_only", "as2d_fixed", *VARIANTS, SOURCE_HINDSIGHT, RESIDENT_HINDSIGHT)
COMBINATION = "as2d_adaptive"  # the scheme the goals judge
# The combination's parts that can cost as well as pay: each is chosen on dev when its setting is on.
DEV_CHOSEN_PARTS = ("hybrid", "guess")


@dataclass(frozen=True)
class AdaptiveSetup:
    """Everything the comparison reads (``jobs/adaptive.py`` fills it from the config)."""

    methods: Mapping[str, Mapping[str, Any]]  # variant -> its settings (conf/method over the catalog)
    budgets: tuple[int, ...]  # the fixed catalog's budgets (cut to the profile's priced widths)
    roles: Mapping[str, Sequence[str]]  # trace role -> profile source names to try
    dev_fraction: float
    seed: int
    workers: int
    bound: Literal["selected", "max"]  # online variants' upper bound: the selected b or the widest priced width
    fit_prior: bool  # online estimates start from what fixed As²d (and serial SD) saw on dev
    prior_rounds: tuple[float, ...]  # ... weighted as the entry among these that does best on dev
    fallback_source: str  # a window whose first source is ineligible (D.4.3) runs on this one


@dataclass(frozen=True)
class Goals:
    """The combination's goals: a share of the oracle (per device where named) and a floor against fixed As²d."""

    of_oracle: float
    of_oracle_by_device: Mapping[str, float]
    vs_fixed: float

    def oracle_goal(self, device: str) -> float:
        return float(self.of_oracle_by_device.get(device, self.of_oracle))


def _results(windows: Sequence[Window], rc: ReplayConfig, profile: DeviceProfile, fallback: str) -> list[ReplayResult]:
    """One replay per window. A window whose first source is ineligible (D.4.3) runs on ``fallback``,
    as the fixed configuration does (``selection.fixed_config_times``)."""
    out = []
    for w in windows:
        cfg = rc
        if rc.source:
            first, *rest = rc.source.split(SEPARATOR)
            if not w.sources[first].eligible:
                cfg = ReplayConfig(rc.scheme, SEPARATOR.join([fallback, *(s for s in rest if s != fallback)]),
                                   **rc.settings)
        out.append(replay(w, cfg, profile))
    return out


def _frame(windows: Sequence[Window], rc: ReplayConfig, profile: DeviceProfile, fallback: str) -> pl.DataFrame:
    """Per-window tokens and time (``_results``)."""
    return results_frame(_results(windows, rc, profile, fallback)).select("window_id", "tokens", "time")


def slot_acceptance(results: Sequence[ReplayResult]) -> float:
    """Pooled conditional acceptance of a chain slot over every verified round: accepted slots over
    tried ones, counted as ``width.AcceptanceEstimate`` counts them (``tried_slots``)."""
    tried = accepted = 0
    for r in results:
        for rec in r.records:
            if rec.chain:
                tried += tried_slots(len(rec.chain), rec.accepted)
                accepted += rec.accepted
    return accepted / tried if tried else PRIOR


def _tps(frame: pl.DataFrame) -> float:
    return float(frame["tokens"].sum() / frame["time"].sum())


def resident_sets(selected: str, sources: Sequence[str]) -> list[str]:
    """Candidate resident sets, the selected source first: alone, with each other source, with all."""
    others = [s for s in sources if s != selected]
    sets = [selected, *(SEPARATOR.join((selected, s)) for s in others)]
    if len(others) > 1:
        sets.append(SEPARATOR.join((selected, *others)))
    return sets


@dataclass(frozen=True)
class _Deployment:
    """What dev fixed for one profile: the selection, the online bound, where online estimates start."""

    setup: AdaptiveSetup
    profile: DeviceProfile
    source: str
    budget: int
    bound: int
    prior: Mapping[str, float]

    def config(self, name: str, source: str, **extra: object) -> ReplayConfig:
        online = scheme_spec(name).needs_costs
        settings = {**self.setup.methods[name], "budget": self.bound if online else self.budget}
        if online:
            settings.update({k: v for k, v in self.prior.items() if k in settings})
        return ReplayConfig(name, source=source, **{**settings, **extra})

    def frame(self, windows: Sequence[Window], rc: ReplayConfig) -> pl.DataFrame:
        return _frame(windows, rc, self.profile, self.setup.fallback_source)


def device_table(windows: list[Window], profile: DeviceProfile, setup: AdaptiveSetup) -> tuple[pl.DataFrame, dict]:
    """Rows (one per method, ``ORDER``) and the dev choices for one device profile."""
    roles, workers, fallback = {k: list(v) for k, v in setup.roles.items()}, setup.workers, setup.fallback_source
    ws = priced_as(windows, profile, roles)
    names = sorted({s for w in windows for s in w.sources})
    sources = [s for s in (profile_source(profile, s, roles) for s in names) if s is not None and s in profile.sources]
    dev, test = split_windows(ws, max(1, round(len(ws) * setup.dev_fraction)), seed=setup.seed)
    top = min(MAX_BUDGET, max(profile.verifier.widths()) - 1)  # never beyond a priced width (D.2.1)
    budgets = [b for b in setup.budgets if b <= top]
    sel = select_budget(dev, profile, sources, budgets, workers=workers)
    bound = sel.budget if setup.bound == "selected" else top

    # Where the online estimates start is a deployment choice too: the acceptance the fixed configuration
    # saw on dev, weighted as the number of rounds that does best on dev (``prior_rounds``).
    prior: dict[str, float] = {}
    if setup.fit_prior:
        prior["prior"] = slot_acceptance(_results(dev.windows, ReplayConfig("as2d", source=sel.source,
                                                                            budget=sel.budget), profile, fallback))
        if all(w.drafts is not None for w in dev.windows):  # the drafter's own: what serial SD saw on dev
            prior["draft_prior"] = slot_acceptance(_results(dev.windows, ReplayConfig("sd"), profile, fallback))
    dep = _Deployment(setup, profile, sel.source, sel.budget, bound, prior)
    chosen, weights = _dev_choices(dep, dev.windows, sources)

    catalog = run_catalog(test.windows, as2d_catalog(sources, budgets), profile, workers=workers)
    oracle = hindsight_oracle(catalog, (sel.source, sel.budget))
    # The same oracle over a stronger fixed catalog -- the guarded anchor, and the EOS candidate left to the
    # bonus: the two rules of this work a fixed configuration can use too. A gain over it is adaptation.
    strong = as2d_catalog(sources, budgets, "as2d_guarded", leave_eos=True)
    strong_oracle = hindsight_oracle(run_catalog(test.windows, strong, profile, workers=workers),
                                     (sel.source, sel.budget))
    base = dep.frame(test.windows, ReplayConfig("target_only"))
    frames = {"target_only": (base, "target_only"),
              "as2d_fixed": (oracle.per_window.select("window_id", "tokens", pl.col("selected_time").alias("time")),
                             f"as2d/{sel.source}/b{sel.budget}")}
    for name in VARIANTS:
        rc = dep.config(name, chosen[name], **weights.get(name, {}))
        frames[name] = (dep.frame(test.windows, rc), rc.label)
    frames.update(_hindsight_rows(dep, test.windows, sources, chosen, weights, frames["as2d_online"][0]))
    rows = _rows(frames, base, profile, len(test.windows), len(dev.windows), oracle.tps_oracle,
                 strong_oracle.tps_oracle)
    return pl.DataFrame(rows), {"source": sel.source, "budget": sel.budget, "bound": bound, "resident": chosen,
                                "prior": prior.get("prior"), "draft_prior": prior.get("draft_prior"),
                                "dev_choice": weights}


def _dev_choices(dep: _Deployment, dev: Sequence[Window], sources: Sequence[str]
                 ) -> tuple[dict[str, str], dict[str, dict[str, object]]]:
    """Per variant, the resident source set and the grid point (prior weight, combination parts) best on dev."""
    chosen, weights = {}, {}
    for name in VARIANTS:
        spec = scheme_spec(name)
        chosen[name] = dep.source
        if spec.multi_source:  # the resident set is a deployment choice: made on dev, like the source and budget
            dev_tps = {s: _tps(dep.frame(dev, dep.config(name, s))) for s in resident_sets(dep.source, sources)}
            chosen[name] = max(dev_tps, key=lambda s: (dev_tps[s], -s.count(SEPARATOR)))
        # The prior's weight, and whether the combination drafts at all (hybrid candidates pay only where
        # the drafter is cheap next to the producer it slows): deployment choices, made on dev.
        grid: list[dict[str, object]] = [{}]
        if spec.needs_costs and dep.prior:
            grid = [{"prior_rounds": float(k)} for k in dep.setup.prior_rounds]
        if name == COMBINATION:  # each part that can cost as well as pay is a dev choice
            own = dep.setup.methods[name]
            for key in DEV_CHOSEN_PARTS:
                if own.get(key):
                    grid = [{**g, key: v} for g in grid for v in (True, False)]
        if len(grid) > 1:
            dev_g = [_tps(dep.frame(dev, dep.config(name, chosen[name], **g))) for g in grid]
            weights[name] = grid[max(range(len(grid)), key=lambda i: (dev_g[i], -i))]
    return chosen, weights


def _hindsight_rows(dep: _Deployment, test: Sequence[Window], sources: Sequence[str], chosen: Mapping[str, str],
                    weights: Mapping[str, Mapping[str, object]], online_frame: pl.DataFrame
                    ) -> dict[str, tuple[pl.DataFrame, str]]:
    """``SOURCE_HINDSIGHT`` and ``RESIDENT_HINDSIGHT``: per window, the faster online budget over sources."""

    def online(source: str) -> pl.DataFrame:
        if source == chosen["as2d_online"]:  # that run is in the table already
            return online_frame
        return dep.frame(test, dep.config("as2d_online", source, **weights.get("as2d_online", {})))

    resident = chosen[COMBINATION].split(SEPARATOR)
    out = {}
    for row, runs in ((SOURCE_HINDSIGHT, list(sources)),  # the online budget reads the first-named source only
                      (RESIDENT_HINDSIGHT, [SEPARATOR.join([s, *(r for r in resident if r != s)]) for s in resident])):
        best = pl.concat([online(s) for s in runs]).group_by("window_id", maintain_order=True).agg(
            pl.col("tokens").first(), pl.col("time").min())
        out[row] = (best, f"min({', '.join(f'as2d_online/{s}' for s in runs)})")
    return out


def _rows(frames: Mapping[str, tuple[pl.DataFrame, str]], base: pl.DataFrame, profile: DeviceProfile, n_test: int,
          n_dev: int, tps_oracle: float, tps_strong: float) -> list[dict[str, Any]]:
    t_fixed = _tps(frames["as2d_fixed"][0])
    rows = []
    for method, (f, label) in frames.items():
        j = f.join(base.select("window_id", pl.col("time").alias("t_base")), on="window_id")
        if j.height != n_test or f["tokens"].sum() != base["tokens"].sum():
            raise RuntimeError(f"{profile.name}/{method}: per-window results do not cover the test split")
        tps = _tps(f)
        rows.append({"device": profile.name, "method": method, "config": label, "tps": tps,
                     "slower_than_target": float((j["time"] > j["t_base"] * (1 + 1e-9)).mean()),
                     "of_oracle": tps / tps_oracle, "oracle_gap": 1.0 - tps / tps_oracle,
                     "of_strong_oracle": tps / tps_strong,
                     "vs_fixed": tps / t_fixed - 1.0, "tps_oracle": tps_oracle,
                     "test_windows": n_test, "dev_windows": n_dev})
    return rows


def goals(table: pl.DataFrame, goal: Goals) -> pl.DataFrame:
    """Per device, whether the combination met its share of the oracle and stayed within the floor against
    fixed As²d (``docs/adaptive.md``)."""
    rows = table.filter(pl.col("method") == COMBINATION)
    need = pl.Series("need", [goal.oracle_goal(d) for d in rows["device"].to_list()], dtype=pl.Float64)
    return rows.with_columns(need).select("device", (pl.col("of_oracle") >= pl.col("need")).alias("oracle_goal_met"),
                                          (pl.col("vs_fixed") >= goal.vs_fixed).alias("fixed_goal_met"))


__all__ = ["COMBINATION", "ORDER", "RESIDENT_HINDSIGHT", "SOURCE_HINDSIGHT", "VARIANTS", "AdaptiveSetup", "Goals",
           "device_table", "goals", "resident_sets", "slot_acceptance"]
