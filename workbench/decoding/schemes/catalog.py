"""The scheme catalog: one frozen spec per scheme, the single source of scheme facts.

Every layer above the core (replay, native, jobs) asks the catalog instead of keeping its own
sets and tables: which schemes read the publication buffer (``decoupled``), which draft in the
verifier's loop (``needs_drafter``), the paper's default settings, the widest physical width a
configuration may verify (for profile checks, D.2.1), the short configuration label
(``as2d/qwen/b7``) and how to build the scheme. Settings are checked by name: a misspelt key is
an error that names it, never silently dropped.

Defaults are the paper's (D.1.3, D.5): ASP threshold 0.4 and cap 24, SD width 8, alignment
``span`` 8. The confidence threshold is 0.4 in As²d and in both ablations, so each ablation
changes one thing (conf/method/as2d*.yaml says why): w/o TD only the drafting (serial ASP capped
at the same budget), w/o BC only the cap (ASP's 24 instead of the selected budget). ``span``
is the alignment search span of the read cursor (C.3); it is not a decoding window.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..alignment import ANCHOR_NEXT_TOKEN, DEFAULT_ALIGN_SPAN, AnchorOrder
from ..costs import RoundCosts
from ..protocols import Drafter
from ..width import PRIOR, PRIOR_ROUNDS
from .adaptive import As2dAdaptive
from .as2d import As2d, CandidateSource
from .asp import ASP_CAP, ASP_THRESHOLD, SpecASR
from .base import Scheme
from .hybrid import As2dHybrid
from .lookahead import PrefixLookahead
from .online import As2dOnline
from .sd import StandardSD
from .source_choice import As2dSourceChoice
from .substitution import As2dSubstitution
from .target_only import TargetOnly

DEFAULT_BUDGET = 7  # As²d proposal budget b when nothing selects one (jobs take model.budget)
DEFAULT_SD_WIDTH = 8


@dataclass(frozen=True)
class SchemeSpec:
    """What the workbench knows about one scheme, by its paper name."""

    name: str  # paper name: target_only, sd, asp, as2d, as2d_wo_td, as2d_wo_bc
    label: str  # display label, e.g. "As²d", "SpecASR ASP"
    decoupled: bool  # reads the publication buffer (producer beside the target)
    needs_drafter: bool  # serial prefix-conditioned drafter in the verifier's loop
    defaults: Mapping[str, Any]  # the paper's default settings; the only settings it accepts
    # The setting that bounds the chain (physical width K for SD, a proposal budget otherwise),
    # and the prefix that names it in a configuration label (``sd/K8``, ``asp/cap24``, ``b7``).
    chain_setting: str | None = None
    tag: str = ""
    _factory: Callable[..., Scheme] = field(default=TargetOnly, repr=False, compare=False)
    # Chooses its chain length from the device's per-width verify costs (drivers pass ``costs``): the
    # online rule, bounded by a widest chain rather than fixed at one budget.
    needs_costs: bool = False
    # Reads several resident candidate sources at once (a ``MultiSource``: ``source=qwen+parakeet``).
    multi_source: bool = False
    # The phone runner (``phone_runner/``, C++ ``as2d_runner``) carries it in protocol v1.
    on_phone: bool = False
    # Beyond the paper (F.1/F.3): an adaptive variant of As²d, compared by ``experiment=adaptive``.
    beyond_paper: bool = False
    # A configuration of As²d (its ablations and variants included): its chain bound is a proposal budget.
    as2d_family: bool = False
    # A method-file key listing values of the chain setting that the paper's row averages (SD's
    # ``widths``: K = 5-8, D.1.3); ``None``: one configuration per method.
    averages: str | None = None
    # Drafts its next proposal beside the target call (prefix lookahead): a native run hands its drafter a
    # thread (``native/lookahead.py``), a priced clock charges ``Call.overlap`` beside the call.
    overlaps: bool = False

    @property
    def speculative(self) -> bool:
        """Verifies candidates (K > 1); target-only never does and pays the plain step cost."""
        return self.chain_setting is not None

    @property
    def serial(self) -> bool:
        """Rounds run strictly in sequence on the verifier (no concurrent producer)."""
        return not self.decoupled

    def settings(self, **overrides: Any) -> dict[str, Any]:
        """The defaults with ``overrides`` applied; an unknown key raises, naming it."""
        for key in overrides:
            if key not in self.defaults:
                allowed = ", ".join(sorted(self.defaults)) or "none"
                near = difflib.get_close_matches(key, list(self.defaults), n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ValueError(f"scheme {self.name!r}: unknown setting {key!r}{hint}; its settings are: {allowed}")
        return {**self.defaults, **overrides}

    def widest_width(self, **settings: Any) -> int:
        """Widest physical width K (root + chain) this configuration may verify."""
        s = self.settings(**settings)
        if self.chain_setting is None:
            return 1
        k = int(s[self.chain_setting])
        return k if self.chain_setting == "width" else k + 1

    def config_label(self, source: str | None = None, **settings: Any) -> str:
        """Short configuration label used in every table: ``as2d/qwen/b7``, ``sd/K8``, ``asp/cap24``."""
        s = self.settings(**settings)
        if self.chain_setting is None:
            return self.name
        tag = f"{self.tag}{s[self.chain_setting]}"
        return f"{self.name}/{source}/{tag}" if self.decoupled else f"{self.name}/{tag}"

    def proposal_budget(self, **settings: Any) -> int | None:
        """The budget a catalog row reports: As²d's b, or the cap of the ablations built on it."""
        if not self.as2d_family or self.chain_setting is None:
            return None
        return int(self.settings(**settings)[self.chain_setting])

    def uses_drafter(self, **settings: Any) -> bool:
        """Whether a build with ``settings`` calls a drafter: ``needs_drafter``, unless the settings turn
        the drafting part off (as2d_adaptive's ``hybrid: false``: online budget and guess, one source)."""
        return self.needs_drafter and self.settings(**settings).get("hybrid", True) is not False

    def build(self, *, max_output: int, eos_id: int | None, drafter: Drafter | None = None,
              source: CandidateSource | None = None, costs: RoundCosts | Mapping[int, float] | None = None,
              **settings: Any) -> Scheme:
        s = self.settings(**settings)
        if drafter is None and self.uses_drafter(**settings):
            raise ValueError(f"scheme {self.name!r} needs a drafter")
        if self.decoupled and source is None:
            raise ValueError(f"scheme {self.name!r} needs a candidate source (buffer)")
        if self.needs_costs:
            if not costs:
                raise ValueError(f"scheme {self.name!r} needs the device's per-width verify costs")
            s["costs"] = RoundCosts.of(costs)
        return self._factory(max_output=max_output, eos_id=eos_id, drafter=drafter, source=source, **s)


def _target_only(*, max_output: int, eos_id: int | None, **_: Any) -> Scheme:
    return TargetOnly(max_output, eos_id)


def _sd(*, max_output: int, eos_id: int | None, drafter: Drafter, width: int, **_: Any) -> Scheme:
    return StandardSD(drafter, width, max_output, eos_id)


def _lookahead(*, max_output: int, eos_id: int | None, drafter: Drafter, width: int, **_: Any) -> Scheme:
    return PrefixLookahead(drafter, width, max_output, eos_id)


def _asp(*, max_output: int, eos_id: int | None, drafter: Drafter, threshold: float, cap: int, **_: Any) -> Scheme:
    return SpecASR(drafter, max_output, eos_id, threshold, cap)


def _as2d(*, max_output: int, eos_id: int | None, source: CandidateSource, budget: int, threshold: float | None,
          span: int, lookback: int | None, anchor_order: AnchorOrder, **_: Any) -> Scheme:
    return As2d(source, budget, max_output, eos_id, span, threshold, lookback, confidence_required=False,
                anchor_order=anchor_order)


def _as2d_wo_td(*, max_output: int, eos_id: int | None, drafter: Drafter, threshold: float, budget: int,
                **_: Any) -> Scheme:
    s = SpecASR(drafter, max_output, eos_id, threshold, budget)
    s.name = "as2d_wo_td"
    return s


def _as2d_wo_bc(*, max_output: int, eos_id: int | None, source: CandidateSource, threshold: float, cap: int,
                span: int, lookback: int | None, anchor_order: AnchorOrder, **_: Any) -> Scheme:
    s = As2d(source, cap, max_output, eos_id, span, threshold, lookback, anchor_order=anchor_order)
    s.name = "as2d_wo_bc"
    return s


def _as2d_guarded(*, max_output: int, eos_id: int | None, source: CandidateSource, budget: int,
                  threshold: float | None, span: int, lookback: int | None, anchor_order: AnchorOrder, leave_eos: bool,
                  **_: Any) -> Scheme:
    s = As2d(source, budget, max_output, eos_id, span, threshold, lookback, confidence_required=False,
             anchor_order=anchor_order, guard=True, leave_eos=leave_eos)
    s.name = "as2d_guarded"
    return s


def _as2d_online(*, max_output: int, eos_id: int | None, source: CandidateSource, budget: int,
                 threshold: float | None, span: int, lookback: int | None, anchor_order: AnchorOrder, guard: bool,
                 costs: RoundCosts, decay: float, prior: float, prior_rounds: float, **_: Any) -> Scheme:
    return As2dOnline(source, budget, max_output, eos_id, costs, decay, prior, prior_rounds, span=span,
                      threshold=threshold, lookback=lookback, confidence_required=False, anchor_order=anchor_order,
                      guard=guard)


def _as2d_subst(*, max_output: int, eos_id: int | None, source: CandidateSource, budget: int,
                threshold: float | None, span: int, lookback: int | None, anchor_order: AnchorOrder, guard: bool,
                **_: Any) -> Scheme:
    return As2dSubstitution(source, budget, max_output, eos_id, span, threshold, lookback,
                            confidence_required=False, anchor_order=anchor_order, guard=guard)


def _as2d_hybrid(*, max_output: int, eos_id: int | None, source: CandidateSource, drafter: Drafter, budget: int,
                 threshold: float | None, span: int, lookback: int | None, anchor_order: AnchorOrder, guard: bool,
                 **_: Any) -> Scheme:
    return As2dHybrid(source, drafter, budget, max_output, eos_id, span=span, threshold=threshold,
                      lookback=lookback, confidence_required=False, anchor_order=anchor_order, guard=guard)


def _as2d_adaptive(*, max_output: int, eos_id: int | None, source: CandidateSource, drafter: Drafter | None,
                   budget: int, threshold: float | None, span: int, lookback: int | None, anchor_order: AnchorOrder,
                   guard: bool, costs: RoundCosts, decay: float, hybrid: bool, prior: float,
                   prior_rounds: float, draft_prior: float, guess: bool, **_: Any) -> Scheme:
    return As2dAdaptive(source, budget, max_output, eos_id, costs, decay, drafter if hybrid else None, prior,
                        prior_rounds, draft_prior, guess, span=span, threshold=threshold, lookback=lookback,
                        confidence_required=False, anchor_order=anchor_order, guard=guard)


def _as2d_sources(*, max_output: int, eos_id: int | None, source: CandidateSource, budget: int,
                  threshold: float | None, span: int, lookback: int | None, anchor_order: AnchorOrder, guard: bool,
                  costs: RoundCosts, decay: float, prior: float, prior_rounds: float, **_: Any) -> Scheme:
    return As2dSourceChoice(source, budget, max_output, eos_id, costs, decay, prior, prior_rounds, span=span,
                            threshold=threshold, lookback=lookback, confidence_required=False,
                            anchor_order=anchor_order, guard=guard)


def _spec(name: str, label: str, factory: Callable[..., Scheme], *, decoupled: bool = False,
          needs_drafter: bool = False, chain: str | None = None, tag: str = "", needs_costs: bool = False,
          multi_source: bool = False, on_phone: bool = False, beyond_paper: bool = False, as2d_family: bool = False,
          averages: str | None = None, overlaps: bool = False, **defaults: Any) -> SchemeSpec:
    return SchemeSpec(name, label, decoupled, needs_drafter, MappingProxyType(defaults), chain, tag, factory,
                      needs_costs, multi_source, on_phone, beyond_paper, as2d_family or beyond_paper, averages,
                      overlaps)


# Alignment (C.3): search span, how long unmatched positions stay eligible (None: the span), and the
# anchor order after a rejection (the paper's "next_token", or "correction_first", beyond the paper).
_ALIGN: dict[str, Any] = {"span": DEFAULT_ALIGN_SPAN, "lookback": None, "anchor_order": ANCHOR_NEXT_TOKEN}

# Where an online scheme's acceptance estimate starts: an acceptance, weighted as that many observed
# rounds (decoding/width.py); a deployment fits both on dev (jobs/adaptive.py).
_PRIOR: dict[str, Any] = {"prior": PRIOR, "prior_rounds": PRIOR_ROUNDS}

# The adaptive schemes also take the guarded anchor (alignment.py; off by default, as in the paper).
_ALIGN_GUARDED: dict[str, Any] = {**_ALIGN, "guard": False}

CATALOG: Mapping[str, SchemeSpec] = MappingProxyType({s.name: s for s in (
    _spec("target_only", "Target only", _target_only, on_phone=True),
    _spec("sd", "SD", _sd, needs_drafter=True, chain="width", tag="K", on_phone=True, averages="widths",
          width=DEFAULT_SD_WIDTH),
    # The older prefix-dependent baseline of Table 13 (D.4.5): SD at the same width whose next
    # proposal is drafted beside the current verification, discarded unless the round accepts all.
    _spec("lookahead", "Prefix lookahead", _lookahead, needs_drafter=True, chain="width", tag="K", overlaps=True,
          width=DEFAULT_SD_WIDTH),
    _spec("asp", "SpecASR ASP", _asp, needs_drafter=True, chain="cap", tag="cap", on_phone=True,
          threshold=ASP_THRESHOLD, cap=ASP_CAP),
    _spec("as2d", "As²d", _as2d, decoupled=True, chain="budget", tag="b", on_phone=True, as2d_family=True,
          budget=DEFAULT_BUDGET, threshold=ASP_THRESHOLD, **_ALIGN),
    _spec("as2d_wo_td", "As²d w/o TD", _as2d_wo_td, needs_drafter=True, chain="budget", tag="cap", on_phone=True,
          as2d_family=True, threshold=ASP_THRESHOLD, budget=DEFAULT_BUDGET),
    _spec("as2d_wo_bc", "As²d w/o BC", _as2d_wo_bc, decoupled=True, chain="cap", tag="b", on_phone=True,
          as2d_family=True, threshold=ASP_THRESHOLD, cap=ASP_CAP, **_ALIGN),
    # Beyond the paper (F.1, F.3): the budget is an upper bound; each round verifies the ready
    # candidates worth their verify time (decoding/width.py). ``decay`` forgets old outcomes.
    _spec("as2d_online", "As²d online budget", _as2d_online, decoupled=True, chain="budget", tag="b",
          needs_costs=True, beyond_paper=True, budget=DEFAULT_BUDGET, threshold=ASP_THRESHOLD, decay=0.9, **_PRIOR,
          **_ALIGN_GUARDED),
    # Adaptive variants (schemes/substitution.py, hybrid.py, adaptive.py): after a rejection verify
    # the correction plus the continuation (substitution guess); draft when the buffer has nothing
    # usable (hybrid candidates, F.1); choose per round among several resident sources (a
    # ``MultiSource``; replay: source "qwen+parakeet"); and all of them with the online budget.
    # The guarded anchor alone (alignment.py): a far match the committed context does not confirm is
    # verified, but moves the read cursor only if the target accepts its first candidate.
    # ``leave_eos``: the chain stops before an EOS candidate, as the online budget's does (width.before_eos);
    # with it this is the strongest fixed catalog here (the adaptive job's second oracle).
    _spec("as2d_guarded", "As²d guarded anchor", _as2d_guarded, decoupled=True, chain="budget", tag="b",
          beyond_paper=True, budget=DEFAULT_BUDGET, threshold=ASP_THRESHOLD, leave_eos=False, **_ALIGN),
    _spec("as2d_subst", "As²d substitution guess", _as2d_subst, decoupled=True, chain="budget", tag="b",
          beyond_paper=True, budget=DEFAULT_BUDGET, threshold=ASP_THRESHOLD, **_ALIGN_GUARDED),
    _spec("as2d_hybrid", "As²d hybrid candidates", _as2d_hybrid, decoupled=True, needs_drafter=True,
          chain="budget", tag="b", beyond_paper=True, budget=DEFAULT_BUDGET, threshold=ASP_THRESHOLD,
          **_ALIGN_GUARDED),
    _spec("as2d_sources", "As²d online source choice", _as2d_sources, decoupled=True, chain="budget", tag="b",
          needs_costs=True, multi_source=True, beyond_paper=True, budget=DEFAULT_BUDGET, threshold=ASP_THRESHOLD,
          decay=0.9, **_PRIOR, **_ALIGN_GUARDED),
    # The combination reads with the guarded anchor on (conf/method/as2d_adaptive.yaml says why).
    _spec("as2d_adaptive", "Adaptive As²d", _as2d_adaptive, decoupled=True, needs_drafter=True, chain="budget",
          tag="b", needs_costs=True, multi_source=True, beyond_paper=True, budget=DEFAULT_BUDGET,
          threshold=ASP_THRESHOLD, decay=0.9, hybrid=True, **_PRIOR, draft_prior=PRIOR, guess=True,
          **{**_ALIGN_GUARDED, "guard": True}),
)})
# Derived facts, for layers that ask by set (never restated elsewhere).
BEYOND_PAPER: tuple[str, ...] = tuple(n for n, s in CATALOG.items() if s.beyond_paper)
ON_PHONE: tuple[str, ...] = tuple(n for n, s in CATALOG.items() if s.on_phone)
HOST_ONLY: tuple[str, ...] = tuple(n for n, s in CATALOG.items() if not s.on_phone)

DECOUPLED: frozenset[str] = frozenset(n for n, s in CATALOG.items() if s.decoupled)
SERIAL: frozenset[str] = frozenset(n for n, s in CATALOG.items() if s.serial)
SCHEMES: tuple[str, ...] = tuple(CATALOG)


def scheme_spec(name: str) -> SchemeSpec:
    """The catalog entry for ``name``; an unknown name lists the choices."""
    spec = CATALOG.get(name)
    if spec is None:
        raise ValueError(f"scheme: unknown name {name!r}; choose one of {', '.join(CATALOG)}")
    return spec


def make_scheme(name: str, *, max_output: int, eos_id: int | None, drafter: Drafter | None = None,
                source: CandidateSource | None = None, costs: RoundCosts | Mapping[int, float] | None = None,
                **settings: Any) -> Scheme:
    """Build a scheme by its paper name; settings are checked against the catalog by name."""
    return scheme_spec(name).build(max_output=max_output, eos_id=eos_id, drafter=drafter, source=source,
                                   costs=costs, **settings)
