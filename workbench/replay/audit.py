"""Audits run on every replay (D.4.3, D.5.1): a violation raises, it is never just logged.

* **exactness** -- the committed output equals the window's greedy reference (Proposition 1);
* **readiness** -- every buffered candidate a round used was published at or before the
  round's decision time (causal publication, C.1);
* **width** -- every physical width a round used is priced by the profile (D.2.1);
* **accounting** -- rounds are sequential on the verifier and inside the charged clock.
"""

from __future__ import annotations

from workbench.decoding import PublicationBuffer, audit_exact
from workbench.decoding.schemes.source_choice import MultiSource

from .pricing import Pricing
from .result import ReplayResult
from .trajectory import Window


class ReplayAuditError(AssertionError):
    """A replay broke the reference-based replay contract."""


def audit_run(window: Window, result: ReplayResult, price: Pricing,
              buffer: PublicationBuffer | MultiSource | None) -> None:
    where = f"window {window.window_id!r}, {result.config.label} on {price.name}"
    audit_exact(result.output, window.reference, label=f"{where}: committed output")
    if result.tokens != len(result.output):
        raise ReplayAuditError(f"{where}: counts {result.tokens} tokens but committed {len(result.output)}")

    prev_end = 0.0
    priced_steps = not result.config.spec.speculative  # target-only: plain steps at the step cost
    for r, t_decide, t_start, t_end in zip(result.untimed, result.t_decide, result.t_start, result.t_end,
                                           strict=True):
        if buffer is not None:
            for pos in r.provenance:
                if pos >= 0 and buffer.publish_time_of(pos) > t_decide:
                    raise ReplayAuditError(
                        f"{where}: round {r.round} used buffer position {pos} published at "
                        f"{buffer.publish_time_of(pos)} after its decision time {t_decide}")
        if not priced_steps and not price.has_width(r.width):
            raise ReplayAuditError(f"{where}: round {r.round} used physical width K={r.width}, "
                                   f"which the profile does not price")
        if not (prev_end <= t_decide <= t_start <= t_end):
            raise ReplayAuditError(f"{where}: round {r.round} times out of order "
                                   f"({t_decide}, {t_start}, {t_end}) after {prev_end}")
        prev_end = t_end

    if result.time < prev_end or result.t_eos > result.time:
        raise ReplayAuditError(f"{where}: charged time {result.time} ends before the last round {prev_end}")
