"""Profile costs in seconds, resolved once per profile for the replay hot loop."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from workbench.decoding import DraftWork

from .producer import SourcePrice
from .profile import DeviceProfile, MissingWidthError


@dataclass(frozen=True, slots=True)
class Pricing:
    """Seconds per operation. Missing widths stay absent and raise on use (D.2.1).

    The clock adds these numbers and no others: ``pricing_for`` fills them from a profile's
    milliseconds, a phone runner from its request's seconds (``phone_runner.reference``)."""

    name: str
    profile: DeviceProfile
    step_s: float
    loop_s: float
    queue_s: float
    align_s: float
    idle_s: dict[int, float]
    conc_s: dict[int, float]
    forward_s: float
    paired_s: float | None
    prob_row_s: float | None
    refresh_s: Mapping[int, float]
    sources: Mapping[str, SourcePrice]

    def verify(self, k: int, concurrent: bool) -> float:
        table = self.conc_s if concurrent else self.idle_s
        cost = table.get(k)
        if cost is None:
            # Let the profile word the error (which width, which widths exist, which rule).
            return self.profile.verify_ms(k, concurrent) / 1000.0
        return cost

    def has_width(self, k: int) -> bool:
        return k in self.idle_s

    def source(self, name: str) -> SourcePrice:
        hit = self.sources.get(name)
        if hit is None:
            self.profile.source(name)  # the profile words the error (which sources exist)
            raise KeyError(f"pricing {self.name!r} has no source {name!r}")
        return hit

    def draft(self, work: DraftWork) -> float:
        """Serial drafting before a target call (D.1.3, D.2.2): forwards, ASP extras, refresh."""
        if work.forwards == 0 and work.paired_forwards == 0 and work.prob_rows == 0 and not work.refresh_width:
            return 0.0
        s = work.forwards * self.forward_s
        if work.paired_forwards or work.prob_rows or work.refresh_width:
            if self.paired_s is None or self.prob_row_s is None:
                raise MissingWidthError(f"profile {self.name!r} has no ASP costs for paired-branch drafting")
            s += work.paired_forwards * self.paired_s + work.prob_rows * self.prob_row_s
            if work.refresh_width:
                refresh = self.refresh_s.get(work.refresh_width)
                if refresh is None:
                    self.profile.kv_refresh_ms(work.refresh_width)  # the profile words the error
                    raise MissingWidthError(f"pricing {self.name!r} has no ASP KV refresh cost at width "
                                            f"{work.refresh_width}")
                s += refresh
        return s


def pricing_for(profile: DeviceProfile) -> Pricing:
    """The profile's prices in seconds, resolved once and kept on the profile object itself."""
    hit = profile.derived.get("pricing")
    if hit is not None:
        return hit
    idle = {k: v / 1000.0 for k, v in profile.verifier.idle_ms.items()}
    conc: dict[int, float] = {}
    for k in idle:
        try:
            conc[k] = profile.verify_ms(k, True) / 1000.0
        except MissingWidthError:
            pass  # stays missing; a call at this width while the producer runs raises
    asp = profile.asp
    price = Pricing(
        name=profile.name, profile=profile, step_s=profile.target_step_ms / 1000.0,
        loop_s=profile.loop_residual_ms / 1000.0, queue_s=profile.queue_ms / 1000.0,
        align_s=profile.alignment_ms / 1000.0, idle_s=idle, conc_s=conc,
        forward_s=profile.source(profile.serial_drafter).op_ms / 1000.0,
        paired_s=None if asp is None else asp.paired_branch_ms / 1000.0,
        prob_row_s=None if asp is None else asp.prob_row_ms / 1000.0,
        refresh_s={} if asp is None else {k: ms / 1000.0 for k, ms in asp.kv_refresh_ms.items()},
        sources={n: SourcePrice.of(c) for n, c in profile.sources.items()},
    )
    profile.derived["pricing"] = price
    return price
