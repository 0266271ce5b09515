"""The typed values of a device cost profile (Appendix D.2): what ``profile.parse_profile`` returns.

Widths follow D.2.1: only measured (or explicitly derived) physical widths exist. A missing width
stays missing; asking for it raises :class:`MissingWidthError` unless the profile states
``missing: median_ratio`` for *concurrent* costs (D.2.4, D.2.5, D.5.2). Every value's provenance
(``source:`` or ``derived:``) stays in ``DeviceProfile.provenance``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from workbench import errors
from workbench.models.kernel_plan import KernelPlan

from .metadata import DeviceMetadata

SourceKind = Literal["autoregressive", "chunk"]
Scenario = Literal["nominal", "low", "high"]


class ProfileError(errors.ProfileError):
    """A malformed profile file; the message names the file and the offending field."""

    def __init__(self, file: str, field_path: str, problem: str) -> None:
        super().__init__(f"field '{field_path}': {problem}", where=file)
        self.file = file
        self.field_path = field_path


class MissingWidthError(errors.ProfileError):
    """A scheme asked for a physical width the profile does not price (D.2.1)."""


@dataclass(frozen=True, slots=True)
class SourceCost:
    """Producer costs for one candidate source.

    ``op_ms`` is one producer operation: a single drafter forward for an autoregressive source,
    one chunk's service time for an external chunk source. ``concurrent_factor`` slows producer
    operations while the verifier is busy (coexistence, D.2.1).
    """

    name: str
    kind: SourceKind
    op_ms: float
    publication_ms: float
    startup_ms: float
    concurrent_factor: float
    batch_tokens: int | None
    has_confidence: bool
    # D.3: an autoregressive producer's operation costs more the longer its context (attention over its
    # KV cache): op cost at position p = op_ms * (1 + growth * (p - growth_ref)), p = tokens produced
    # before the operation. 0 prices every operation alike (the phones: the paper states no growth).
    growth: float = 0.0
    growth_ref: float = 0.0
    # A.3: the decode clock starts after the initial prompt prefill. True when this producer's prompt prefill
    # (operation 0: every forward up to its first token) ran before the clock, as the native host driver
    # runs it: replay then charges operation 0 nothing, its tokens are out at the clock's zero, and the
    # startup precedes operation 1 (``ProducerPlan.build``).
    prefilled: bool = False

    def op_at(self, position: int) -> float:
        """One operation's idle cost (ms) when it starts with ``position`` tokens produced."""
        if not self.growth:
            return self.op_ms
        return self.op_ms * max(0.1, 1.0 + self.growth * (position - self.growth_ref))


@dataclass(frozen=True, slots=True)
class AspCost:
    """SpecASR ASP extras (D.1.3, D.2.2): paired-branch forward, per-row probabilities, KV refresh."""

    paired_branch_ms: float
    prob_row_ms: float
    kv_refresh_ms: Mapping[int, float]


@dataclass(frozen=True, slots=True)
class ContextFit:
    """A target call's cost as a line in its prefix length, plus a cold-call surcharge (host calibration).

    ``cost(K, pos) = cost(K) + slope_ms[K] * (pos - ref_tokens)``: the width's median cost was measured
    around ``ref_tokens`` committed tokens; ``cold_ms`` is added to the first call after a window's
    prefill (caches are cold after idle). ``residual_ms`` is the fit's residual (RMS), for the reader.

    ``concurrent_slope_ms``: the line of a call that starts beside the running producer, fitted on
    As²d's own calls there; a width it lacks takes ``slope_ms``. Beside the producer the two processes
    share the cores and the memory bus, and that share, not the idle sweep's attention cost, sets how
    a call's time moves along the window; ``None`` (profiles fitted before the field) prices both
    alike.
    """

    ref_tokens: float
    slope_ms: Mapping[int, float]
    cold_ms: float
    residual_ms: float
    concurrent_slope_ms: Mapping[int, float] | None = None

    def slope(self, k: int, concurrent: bool = False) -> float:
        """The width's slope (beside the producer: its concurrent slope where fitted), else the nearest
        fitted width's (slopes vary slowly with K)."""
        if concurrent and self.concurrent_slope_ms is not None and k in self.concurrent_slope_ms:
            return self.concurrent_slope_ms[k]
        if k in self.slope_ms:
            return self.slope_ms[k]
        return self.slope_ms[min(self.slope_ms, key=lambda w: (abs(w - k), w))] if self.slope_ms else 0.0


@dataclass(frozen=True, slots=True)
class VerifierCost:
    """Target verifier cost by physical width ``K``, idle and while the producer runs.

    ``concurrent_ms`` holds only the widths with a direct concurrent figure (measured ms or a
    per-width ratio); the rest come from ``factor`` or the median-ratio rule at lookup time.
    """

    idle_ms: Mapping[int, float]
    concurrent_ms: Mapping[int, float]
    factor: float | None
    missing: Literal["median_ratio", "error"]
    clip_at_one: bool
    low: float | None = None
    high: float | None = None
    fallback_ratio: float | None = None
    # Per-width dispersion of the idle cost (standard deviation, ms) where calibration states one:
    # replay prices the median, figures draw error bars from this (Fig. 8).
    idle_sd_ms: Mapping[int, float] = field(default_factory=lambda: MappingProxyType({}))
    # What drives the replay error (D.3): cost growth with context length and the cold first call.
    context: ContextFit | None = None

    def widths(self) -> tuple[int, ...]:
        return tuple(sorted(self.idle_ms))

    def cost_ms(self, k: int, concurrent: bool, profile: str = "?") -> float:
        idle = self.idle_ms.get(k)
        if idle is None:
            raise MissingWidthError(
                f"profile {profile!r} has no verifier cost at physical width K={k} "
                f"(priced widths: {_span(self.idle_ms)}); missing widths are never zero (D.2.1)"
            )
        if not concurrent:
            return idle
        direct = self.concurrent_ms.get(k)
        if direct is not None:
            return direct
        ratio = self.factor if self.factor is not None else self.fallback_ratio
        if ratio is None:
            raise MissingWidthError(
                f"profile {profile!r} has no concurrent verifier cost at K={k} and states "
                f"missing: error (concurrent widths: {_span(self.concurrent_ms)})"
            )
        return idle * ratio


@dataclass(frozen=True, slots=True)
class CalibrationCheck:
    """A host calibration's steadiness (``native/steadiness.py``): whether this machine held its speed
    while it was measured (``spread``: largest probe checkpoint over the smallest; ``inversions``: narrower
    widths priced above wider ones). An unsteady profile's shape is off, which no drift ratio repairs;
    ``stage_factors``: what each stage's samples were multiplied by to bring them to the drift anchor's
    speed (``native/stage_speed.py``; empty: left as measured, as phone calibrations are)."""

    steady: bool
    spread: float
    inversions: int
    stage_factors: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeviceProfile:
    name: str
    device: str
    file: str
    target_step_ms: float
    loop_residual_ms: float
    queue_ms: float
    alignment_ms: float
    verifier: VerifierCost
    sources: Mapping[str, SourceCost]
    serial_drafter: str
    asp: AspCost | None
    provenance: Mapping[str, str] = field(repr=False)
    # The machine that measured it (host profiles: workbench.native.fingerprint); None for phone profiles.
    machine: Mapping[str, Any] | None = None
    # What the phone is and how the paper deployed on it (Table 6, D.1.1); costs never read it.
    metadata: DeviceMetadata | None = None
    # Host profiles: the median target-only round (ms) on the first calibration window, measured with
    # the rest; a later probe on that window says how far this machine's speed has drifted (drift.py).
    anchor_ms: float | None = None
    anchor_window: str | None = None  # the calibration window that anchor_ms was measured on
    # Idle verify call (ms) per probe width on that window at its first context, measured with the rest:
    # a later probe of the same widths says how the machine's drift differs by width (drift.py).
    anchor_widths_ms: Mapping[int, float] | None = None
    # Host profiles: As²d's median native time per committed token (ms) on that window, measured with the
    # rest: the same probe run of As²d says how far the machine drifted for a run with both cores busy,
    # which a one-core target-only probe need not see (drift.py).
    anchor_as2d_ms: float | None = None
    # Host profiles: the producer's median interval per drafter forward (ms) beside the target in As²d's
    # runs on that window, measured with the rest: the probe's As²d run says how far the producer's own
    # CPU drifted, which on a VM moves apart from the target's (drift.py).
    anchor_producer_ms: float | None = None
    # Host profiles: how a decoder forward of each width runs cheapest on this machine (kernel and padded
    # width, models.kernel_plan), fitted by its calibration; the verifier costs above were measured under it.
    kernel_plan: KernelPlan | None = None
    # Host profiles: whether the calibration's checkpoints found this machine steady (None: not checked).
    calibration: CalibrationCheck | None = None
    # Derived per-object data (replay's resolved prices); never copied by ``replace``, never compared.
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def verify_ms(self, k: int, concurrent: bool = False) -> float:
        return self.verifier.cost_ms(k, concurrent, self.name)

    def source(self, name: str) -> SourceCost:
        if name not in self.sources:
            raise KeyError(f"profile {self.name!r} has no source {name!r} (has {sorted(self.sources)})")
        return self.sources[name]

    def kv_refresh_ms(self, k: int) -> float:
        if self.asp is None:
            raise MissingWidthError(f"profile {self.name!r} has no ASP costs")
        if k not in self.asp.kv_refresh_ms:
            raise MissingWidthError(
                f"profile {self.name!r} has no ASP KV refresh cost at width {k} "
                f"(priced: {_span(self.asp.kv_refresh_ms)})"
            )
        return self.asp.kv_refresh_ms[k]

    def scenario(self, which: Scenario, fixed_up_to: int | None = None) -> DeviceProfile:
        """Cost-sensitivity variant (D.4.3): replace the extrapolated concurrent ratio.

        Widths with a direct concurrent figure keep it; the constant factor or the median-ratio
        fallback is replaced by the profile's stated low/high ratio. With ``fixed_up_to=8``, physical
        K1-8 keep their nominal concurrent cost too (D.4.3: "physical K1-8 costs remain fixed";
        D.5.1-D.5.3 vary only the rounds above K8), so only the larger, modeled widths move.
        """
        if which == "nominal":
            return self
        ratio = self.verifier.low if which == "low" else self.verifier.high
        if ratio is None:
            raise ValueError(f"{self.file}: no '{which}' sensitivity ratio in verifier.concurrent")
        v = self.verifier
        keep = {k: v.cost_ms(k, True, self.name) for k in v.idle_ms
                if fixed_up_to is not None and k <= fixed_up_to and k not in v.concurrent_ms
                and (v.factor is not None or v.fallback_ratio is not None)}
        new = replace(v, factor=ratio if v.factor is not None else None,
                      fallback_ratio=ratio if v.factor is None and v.fallback_ratio is not None else None,
                      concurrent_ms=MappingProxyType(dict(sorted({**v.concurrent_ms, **keep}.items()))))
        return replace(self, verifier=new, name=f"{self.name}@{which}")


def _span(widths: Mapping[int, float]) -> str:
    ks = sorted(widths)
    if not ks:
        return "none"
    if ks == list(range(ks[0], ks[-1] + 1)):
        return f"K{ks[0]}-K{ks[-1]}"
    return ",".join(f"K{k}" for k in ks)


__all__ = ["AspCost", "CalibrationCheck", "ContextFit", "DeviceProfile", "MissingWidthError", "ProfileError",
           "Scenario", "SourceCost", "SourceKind", "VerifierCost"]
