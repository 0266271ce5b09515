"""Native episodes on the host: placements, the host setup, one scheme on one window, repeated runs.

The one native pipeline behind the demo job, calibration (D.2), replay agreement (D.3) and the
benchmark. A ``HostSetup`` is a loaded model pair (``workbench.models.pair``), the producer
process's spec and placement, and every scheme's settings, checked by the scheme catalog.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from workbench.decoding import SCHEMES, RoundCosts, scheme_spec
from workbench.decoding.cumulative import BATCHES
from workbench.decoding.verification import ExactnessError
from workbench.models.pair import ModelPair, load_pair
from workbench.replay.profile import DeviceProfile

from .driver import Fallback, NativeHost, NativeResult
from .noise_floor import RepeatRule
from .probe_choice import ProbeChoice
from .producer import ALLOWED_CPUS, Placement, ProducerSpec
from .samples import MIN_PER_TOKEN, SAMPLE_SCHEMA, sample
from .sweep import width_probe
from .windows import AudioWindow

# Settings of the host protocol (bench, calibration, agreement): SD and prefix lookahead verify at
# As²d's widest width b+1, and ASP's cap 15 keeps physical K <= 16, the widths calibration measures (D.2.3 uses 14).
ASP_HOST_CAP = 15


def host_overrides(budget: int) -> dict[str, dict[str, Any]]:
    return {"sd": {"width": budget + 1}, "lookahead": {"width": budget + 1}, "asp": {"cap": ASP_HOST_CAP}}


def default_placements() -> tuple[Placement, Placement]:
    """(verifier, producer): the first allowed CPU and the second, one thread each; else the OS decides.
    Allowed means at import (``ALLOWED_CPUS``), not this thread's affinity now, which a placement narrows."""
    cpus = ALLOWED_CPUS
    if len(cpus) >= 2:
        return Placement(1, (cpus[0],)), Placement(1, (cpus[1],))
    return Placement(1), Placement(1)


def all_cores() -> Placement:
    """Every CPU allowed at import, one thread each: the verifier once the producer's core is free."""
    return Placement(max(1, len(ALLOWED_CPUS)), ALLOWED_CPUS or None)


def scheme_settings(scheme: str, budget: int, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every setting of ``scheme``: catalog defaults, ``overrides``, and the pair's budget where it has one."""
    spec = scheme_spec(scheme)
    over = dict(overrides or {})
    if "budget" in spec.defaults:
        over["budget"] = budget  # the proposal budget is the pair's (conf/model), fixed before testing
    return spec.settings(**over)


@dataclass
class HostSetup:
    """The real pair on this host: models, the producer process's spec, placements, scheme settings."""

    pair: ModelPair
    producer: ProducerSpec | None  # None: target-only alone, no producer process
    verifier: Placement
    settings: dict[str, dict[str, Any]]  # scheme -> complete make_scheme settings
    # Per-width verify cost of a round on this machine (ms; its host profile), for cost-aware schemes
    # (catalog needs_costs, e.g. as2d_online); None: such schemes cannot run on this setup.
    costs: RoundCosts | None = None
    # The verifier's placement once the producer has finished (driver.JoiningCores: its core joins);
    # None keeps one core, as calibration and replay price it.
    widen: Placement | None = None
    # With ``widen``: stop a producer whose candidates have not paid (driver.Fallback); None never stops it.
    fallback: Fallback | None = None

    @property
    def target(self) -> Any:
        return self.pair.target

    @property
    def serial(self) -> Any:
        return self.pair.serial

    @property
    def source(self) -> str:  # the producer's source name in the host profile
        return self.pair.producer_name

    @property
    def serial_source(self) -> str | None:
        return self.pair.serial_name

    @property
    def budget(self) -> int:
        return self.pair.budget

    @property
    def max_output(self) -> int:
        return self.pair.max_output

    @property
    def producer_spec(self) -> ProducerSpec:
        """The producer process's spec; a setup that runs target-only alone has none (a ``ValueError``)."""
        if self.producer is None:
            raise ValueError("this host setup runs target-only alone: it has no producer process")
        return self.producer

    @property
    def batch_tokens(self) -> int:
        return self.producer_spec.batch_tokens

    def params(self, scheme: str) -> dict[str, Any]:
        return dict(self.settings[scheme])

    def uses_drafter(self, scheme: str) -> bool:
        """Whether ``scheme`` drafts with this setup's settings (``SchemeSpec.uses_drafter``): no
        per-window drafter is built for one that never calls it."""
        return scheme_spec(scheme).uses_drafter(**self.settings.get(scheme, {}))

    def use_profile(self, profile: DeviceProfile | None) -> bool:
        """Run the target by the kernel plan of this machine's host ``profile`` (its verifier costs were
        measured under it, ``models.kernel_plan``); True when the target took a plan. A profile without
        one (an older calibration, another engine) leaves the target on its configured kernels."""
        plan = None if profile is None else profile.kernel_plan
        return plan is not None and self.pair.use_kernel_plan(plan)


def host_setup(model: Mapping[str, Any] | ModelPair, *, overrides: Mapping[str, Mapping[str, Any]] | None = None,
               verifier: Placement | None = None, producer: Placement | None = None,
               publication: str = BATCHES) -> HostSetup:
    """The host setup of a ``conf/model`` mapping (or an already loaded pair).

    ``overrides``: scheme -> settings (a job's ``conf/method`` values); default: ``host_overrides``.
    ``publication``: how the producer feeds the buffer (``decoding.cumulative.publication_for_task``:
    spoken QA publishes cumulative prefixes, D.1.2)."""
    pair = model if isinstance(model, ModelPair) else load_pair(model)
    vdef, pdef = default_placements()
    placed = pair.config.get("placement") or {}  # a pair's own threads (conf/model placement:, e.g. Omni-7B on 6)
    vdef, pdef = (Placement(int(placed[r]["threads"]), tuple(placed[r]["cpus"]) if placed[r].get("cpus") else None)
                  if placed.get(r) else d for r, d in (("verifier", vdef), ("producer", pdef)))
    over = host_overrides(pair.budget) if overrides is None else overrides
    settings = {s: scheme_settings(s, pair.budget, over.get(s)) for s in SCHEMES}
    spec = ProducerSpec(drafter=pair.producer_cfg, target_tokenizer=pair.target_tokenizer, target_eos=pair.eos_id,
                        batch_tokens=pair.batch_tokens, placement=producer or pdef, publication=publication)
    return HostSetup(pair, spec, verifier or vdef, settings)


def run_scheme(host: NativeHost, setup: HostSetup, window: AudioWindow, scheme: str) -> NativeResult:
    """One native run of ``scheme`` on ``window``; the serial drafter's audio prefill is off the clock.

    Target, serial drafter and producer are all prompted with the window's own instruction (a
    CoVoST 2 window translates, a Spoken SQuAD window answers its question), as in trace collection."""
    ask = window.instruction
    drafter = setup.pair.new_drafter(window.audio, ask) if setup.uses_drafter(scheme) else None
    costs = setup.costs if scheme_spec(scheme).needs_costs else None
    if scheme_spec(scheme).needs_costs and costs is None:
        raise ValueError(f"scheme {scheme!r} needs this machine's per-width costs: HostSetup.costs "
                         "(workbench.native.bench.profile_costs of the host profile)")
    return host.run(window.window_id, scheme, setup.pair.new_target(window.audio, ask), audio=window.audio,
                    max_output=setup.max_output, drafter=drafter, params=setup.params(scheme), costs=costs,
                    instruction=ask, widen=setup.widen, fallback=setup.fallback)


# ------------------------------------------------------------------------ repeated episodes
def publication_groups(times: Sequence[float]) -> list[int]:
    """Sizes of the runs of tokens published together (one publication time), in stream order. A
    cross-vocabulary producer holds a word back until it is complete (Tok_T), so a word of several
    target tokens appears at once: the event record replay and calibration read, as traces do."""
    return [len(list(group)) for _, group in itertools.groupby(times)]


def operation_positions(times: Sequence[float], ops: Sequence[int] = ()) -> list[int]:
    """The producer operation (0: the prompt prefill) that released each published token: from the
    tokens' forward counts when the run counted them (``NativeResult.producer_ops``, ``operations_of``),
    else one operation per token."""
    if len(ops) != len(times) or not ops:
        return list(range(len(times)))
    return [f - ops[0] for f in ops]


def publication_rows(window_id: str, scheme: str, rep: int, times: Sequence[float],
                     ops: Sequence[int] = ()) -> list[dict[str, Any]]:
    """The producer as it really ran beside the target (D.3), per *operation* (a drafter forward; one per
    token unless ``ops`` counts them, ``operation_positions``): its first publication after the clock
    (``producer_first``, ``tokens``: the operations replay prices up to it) and its mean interval per
    operation from then on (``producer_token``, ``tokens`` operations). Calibration prices coexistence
    from these rather than from a synthetic load.

    ``producer_interval``: each operation's share of the interval that released its group, at its position
    (``offset``): a group published together after a gap ``d`` spanning ``s`` operations gives each
    ``d / s``, so a held-back word is neither free operations nor one slow one (``publication_groups``)."""
    pos = operation_positions(times, ops)
    first = next((i for i, t in enumerate(times) if t > 0), None)  # the prefill's tokens precede the clock
    if first is None:
        return []
    after = times[first:]
    sizes = publication_groups(after)
    last = [first + sum(sizes[: g + 1]) - 1 for g in range(len(sizes))]  # each group's last token
    rows = [sample("producer_first", window_id, scheme=scheme, rep=rep, ms=1000 * after[0],
                   tokens=pos[last[0]] + 1)]
    done = pos[last[-1]] - pos[last[0]]  # operations after the first publication
    if done and after[-1] > after[0]:
        rows.append(sample("producer_token", window_id, scheme=scheme, rep=rep, concurrent=True,
                           ms=1000 * (after[-1] - after[0]) / done, tokens=done))
    for a, b in zip(last, last[1:], strict=False):
        span = pos[b] - pos[a]
        if span <= 0:
            continue
        share = 1000 * (times[b] - times[a]) / span
        rows += [sample("producer_interval", window_id, scheme=scheme, rep=rep, concurrent=True,
                        offset=pos[a] + 1 + j, ms=share) for j in range(span)]
    return rows


def producer_token_ms(times: Sequence[float], ops: Sequence[int] = ()) -> float | None:
    """The producer's interval per operation in one run (``publication_rows``' ``producer_token``,
    the statistic the profile's ``anchor_producer_ms`` is the calibration median of); None when it ran
    fewer than ``MIN_PER_TOKEN`` operations after its first publication."""
    rows = [r for r in publication_rows("", "as2d", 0, times, ops) if r["kind"] == "producer_token"
            and r["tokens"] >= MIN_PER_TOKEN]
    return rows[0]["ms"] if rows else None


@dataclass
class Episodes:
    rows: list[dict[str, Any]] = field(default_factory=list)  # one "episode" row per measured run
    results: list[tuple[str, str, int, NativeResult]] = field(default_factory=list)  # (window, scheme, rep, run)
    placement: dict[str, Any] = field(default_factory=dict)  # the host's processes as placed
    # (window, rep) -> ms per target-only round on the drift anchor's window, run just before that rep
    probes: dict[tuple[str, int], float] = field(default_factory=dict)
    # (window, rep) -> ms per committed token of As²d on that window, run right after the target-only probe
    as2d_probes: dict[tuple[str, int], float] = field(default_factory=dict)
    # (window, rep) -> the producer's interval per drafter forward (ms) in that As²d probe run
    producer_probes: dict[tuple[str, int], float] = field(default_factory=dict)
    # (window, rep) -> {width: median idle verify call (ms)} on that window at offset 0, just before that rep
    width_probes: dict[tuple[str, int], dict[int, float]] = field(default_factory=dict)
    # (window, rep) -> the drift probe's runs on the anchor window (target-only, then As²d when probed): the
    # calls and publications behind the ratios above, kept so a later model can read other ratios from them
    probe_runs: dict[tuple[str, int], tuple[NativeResult, ...]] = field(default_factory=dict)
    # window -> the target's greedy output with no kernel plan (plain kernels, unpadded), where the target
    # runs by one: every run on the window, target-only included, is audited against it (untimed)
    references: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def runs(self, window_id: str, scheme: str) -> list[NativeResult]:
        return [r for w, s, _, r in self.results if w == window_id and s == scheme]

    def rounds(self) -> pl.DataFrame:
        out = []
        for wid, scheme, rep, r in self.results:
            end = r.producer_end
            for rec in r.records:
                out.append({**rec.as_row(), "window_id": wid, "config": scheme, "rep": rep, "T": r.time,
                            "producer_running": rec.t_start < end})
        return pl.DataFrame(out, schema_overrides={"chain": pl.List(pl.Int64), "provenance": pl.List(pl.Int64),
                                                   "committed": pl.List(pl.Int64), "k1_reason": pl.Utf8,
                                                   "cursor_before": pl.Int64, "cursor_after": pl.Int64,
                                                   "next_root": pl.Int64}, infer_schema_length=None)


def median_run(runs: Sequence[NativeResult]) -> int:
    """Index of the median-latency run (D.3): the one run replay re-prices, and whose drift probe it uses."""
    order = sorted(range(len(runs)), key=lambda i: runs[i].time)
    return order[len(order) // 2]


def as_calibrated(setup: HostSetup) -> HostSetup:
    """``setup`` with As²d as host calibration runs it (catalog settings under ``host_overrides``, the
    verifier on its one core throughout): how the profile's ``anchor_as2d_ms`` was measured, so a probe
    of it compares like with like whatever the job's own As²d settings are."""
    a2 = scheme_settings("as2d", setup.budget, host_overrides(setup.budget).get("as2d"))
    return replace(setup, settings={**setup.settings, "as2d": a2}, widen=None, fallback=None)


def unplanned_reference(host: NativeHost, setup: HostSetup, window: AudioWindow) -> tuple[int, ...] | None:
    """The target's own greedy output on ``window`` with its kernel plan off (plain, unpadded forwards),
    off the clock: what a planned target-only run must reproduce token for token. None without a plan."""
    switch = getattr(setup.pair.target, "kernels", None)
    if switch is None or switch.plan is None:
        return None
    plan, switch.plan = switch.plan, None
    try:
        return run_scheme(host, setup, window, "target_only").output
    finally:
        switch.plan = plan


def native_episodes(setup: HostSetup, windows: Sequence[AudioWindow], schemes: Sequence[str],
                    reps: int | RepeatRule, warmup: int = 1, host: NativeHost | None = None, progress: bool = False,
                    probe: AudioWindow | ProbeChoice | None = None, probe_widths: Sequence[int] = (),
                    probe_as2d: bool = False) -> Episodes:
    """Warm-up then ``reps`` measured runs per scheme and window, order alternating per repetition (D.3);
    a ``RepeatRule`` adds repetitions to a window whose medians are not yet resolved.

    ``probe``: the drift anchor's calibration window (``replay/drift.py``), or a ``ProbeChoice`` of dev
    windows that picks one per window (``probe_choice.py``); one target-only run on it
    before each measured repetition says how fast this machine runs at that moment (``Episodes.probes``);
    with ``probe_widths``, idle verify calls of those widths on it too (``Episodes.width_probes``); with
    ``probe_as2d``, one As²d run on it too (``Episodes.as2d_probes``, As²d's own drift anchor, and its
    producer's interval per token, ``Episodes.producer_probes``, the producer's CPU's own drift anchor)."""
    if host is None:
        with NativeHost(setup.producer, setup.verifier) as h:
            return native_episodes(setup, windows, schemes, reps, warmup, h, progress, probe, probe_widths,
                                   probe_as2d)
    from tqdm.auto import tqdm

    from workbench.tracking.partial import record

    rule = reps if isinstance(reps, RepeatRule) else RepeatRule(reps)
    ep = Episodes(placement=host.placement)
    for w in tqdm(windows, desc="native host", unit="window", disable=not progress):
        ref = unplanned_reference(host, setup, w)
        if ref is not None:
            ep.references[w.window_id] = ref
        rep = -warmup
        at = probe.for_window(w) if isinstance(probe, ProbeChoice) else probe
        while rep < 0 or rule.more(rep, {m: [r.time for r in ep.runs(w.window_id, m)] for m in schemes}):
            if at is not None and rep >= 0:
                if probe_widths:
                    ep.width_probes[(w.window_id, rep)] = width_probe(setup.pair, at, probe_widths)
                run = run_scheme(host, setup, at, "target_only")
                ep.probes[(w.window_id, rep)] = 1000 * run.time / max(1, len(run.records))
                ep.probe_runs[(w.window_id, rep)] = (run,)
                if probe_as2d:
                    a2 = run_scheme(host, as_calibrated(setup), at, "as2d")
                    if a2.output != run.output:  # C.4: a probe is a speculative run too
                        raise ExactnessError(f"As²d drift probe on {at.window_id}: output differs from "
                                             "target-only's")
                    ep.as2d_probes[(w.window_id, rep)] = 1000 * a2.time / max(1, len(a2.output))
                    ep.probe_runs[(w.window_id, rep)] = (run, a2)
                    per_token = producer_token_ms(a2.producer_times, a2.producer_ops)
                    if per_token is not None:
                        ep.producer_probes[(w.window_id, rep)] = per_token
            for scheme in (schemes if rep % 2 == 0 else list(reversed(schemes))):
                r = run_scheme(host, setup, w, scheme)
                if rep < 0:
                    continue
                ep.results.append((w.window_id, scheme, rep, r))
                record("native_episodes", {"window_id": w.window_id, "method": scheme, "rep": rep,
                                           "tokens": len(r.output), "time": r.time})  # kept if a later one raises
                ep.rows.append(sample("episode", w.window_id, scheme=scheme, rep=rep, ms=1000 * r.time,
                                      tokens=len(r.output), rounds=len(r.records)))
                spans = [s for s in r.stages if s[0] == "producer" and s[4] == -1]
                if spans:  # producer startup: from the clock's zero to its first forward (process wake-up)
                    ep.rows.append(sample("producer_startup", w.window_id, scheme=scheme, rep=rep,
                                          ms=1000 * min(s[2] for s in spans)))
                ep.rows += publication_rows(w.window_id, scheme, rep, r.producer_times, r.producer_ops)
            rep += 1
    return ep


__all__ = ["HostSetup", "Episodes", "SAMPLE_SCHEMA", "as_calibrated", "default_placements", "host_setup",
           "median_run", "native_episodes", "producer_token_ms", "publication_rows", "run_scheme", "sample",
           "scheme_settings", "unplanned_reference"]
