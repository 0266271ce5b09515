"""As²d: verify whatever the target-decoupled producer has published (paper Section 4).

The producer runs on its own history and publishes to the buffer; this scheme never waits for
it. Each round it anchors the known root in the buffer (``ReadCursor``), takes up to ``budget``
published candidates after the anchor, and hands them to the target. If nothing usable is ready
the target takes a plain step. With ``threshold`` set, the chain also stops after the first
low-confidence candidate: As²d keeps SpecASR's 0.4 where the source publishes confidences (D.4.3,
D.5.1); the ``w/o BC`` ablation applies the same rule with ASP's cap instead of the budget.

With ``guard`` (beyond the paper) the anchor is guarded (``alignment.py``): a far match
the committed context does not confirm is verified, but a rejection of its first candidate leaves
the read cursor where an unmatched round would. With ``leave_eos`` the chain stops before an EOS
candidate: nothing follows EOS, so the bonus commits it at one width less (``width.before_eos``).
"""

from __future__ import annotations

from typing import Protocol, cast

from ..alignment import ANCHOR_NEXT_TOKEN, ANCHOR_ORDERS, DEFAULT_ALIGN_SPAN, AnchorOrder, ReadCursor
from ..buffer import Snapshot
from ..records import Call, K1Reason
from ..verification import Verdict
from ..width import before_eos
from .asp import confident_prefix
from .base import Scheme, check_budget, check_threshold


def drafted_cursor(cursor: ReadCursor, accepted: int, lookback: int) -> ReadCursor:
    """The read cursor after a round on candidates not read from this buffer: the target advanced
    ``1 + accepted`` tokens without it."""
    nxt = cursor.expected + 1 + accepted
    return ReadCursor(max(cursor.cursor, nxt - lookback), nxt)


class CandidateSource(Protocol):
    """Anything that can show what was published by time ``t`` (a ``PublicationBuffer``)."""

    def snapshot(self, t: float = ...) -> Snapshot: ...


class As2d(Scheme):
    name = "as2d"
    uses_buffer = True
    cursor: ReadCursor
    _correction: tuple[int, int] | None  # (mismatch slot, correction token)
    _processing: bool
    _tentative: bool

    def __init__(
        self,
        source: CandidateSource,
        budget: int,
        max_output: int,
        eos_id: int | None,
        span: int = DEFAULT_ALIGN_SPAN,
        threshold: float | None = None,
        lookback: int | None = None,
        confidence_required: bool = True,
        anchor_order: AnchorOrder = ANCHOR_NEXT_TOKEN,
        guard: bool = False,
        leave_eos: bool = False,
    ) -> None:
        super().__init__(max_output, eos_id)
        self.source = source
        self.budget = check_budget("budget", budget)
        self.span = check_budget("span", span, low=1, high=10_000)
        self.threshold = check_threshold("threshold", threshold)
        # As²d gates on confidence "where available" (D.4.3): a candidate its source gave no
        # confidence never stops the chain. The w/o-BC ablation restores ASP's rule, which needs them.
        self.confidence_required = confidence_required
        # How many plain steps an unmatched buffer position stays eligible (target insertions).
        self.lookback = self.span if lookback is None else check_budget("lookback", lookback, low=1, high=10_000)
        if anchor_order not in ANCHOR_ORDERS:
            raise ValueError(f"anchor_order must be one of {', '.join(ANCHOR_ORDERS)}, got {anchor_order!r}")
        self.anchor_order = anchor_order
        self.guard = bool(guard)
        self.leave_eos = bool(leave_eos)

    # -- the reader API: how a scheme combining several As²d readers drives one (source_choice.py) ------
    def join(self, output: list[int]) -> None:
        """Begin a window reading the committed prefix ``output`` another scheme owns (the same list)."""
        self.output, self.records, self.done = output, [], False
        self._reset()

    @property
    def correction_pending(self) -> bool:
        """This round's root is a correction still to be processed (C.3, Fig. 4c)."""
        return self._processing

    def verified(self, call: Call, verdict: Verdict) -> int | None:
        """Move the read cursor after a round this reader planned was verified; the cursor after it."""
        return self._after(call, verdict)

    def passed(self, accepted: int) -> int:
        """The target advanced ``1 + accepted`` tokens on candidates not this reader's (another source's
        or a drafter's): the cursor follows the output, and a pending correction is dropped."""
        self.cursor = drafted_cursor(self.cursor, accepted, self.lookback)
        self._processing, self._correction = False, None
        return self.cursor.cursor

    def _reset(self) -> None:
        self.cursor = ReadCursor()
        # Paper order (C.3): after a rejection the correction is processed in a plain step, and the
        # correction token stays on record for the next round's fallback search.
        self._correction = None  # (mismatch slot, correction token)
        self._processing = False  # this round's root is a correction still to be processed
        self._tentative = False  # this round's anchor is an unconfirmed far match (guard)

    def plan(self, now: float) -> Call:
        n = self.chain_limit(self.budget)
        before = self.cursor.cursor
        self._tentative = False
        if n == 0:
            return Call(root=self.root, k1_reason="output_cap", cursor_before=before)
        if self._processing:
            return Call(root=self.root, k1_reason="correction", cursor_before=before)
        snap = self.source.snapshot(now)
        if self.guard:
            prev = self.output[-2] if len(self.output) > 1 else None
            anchor, self._tentative = self.cursor.find_guarded(snap, self.root, prev, self.span)
        else:
            anchor = self.cursor.find_anchor(snap, self.root, self.span)
        if anchor is None and self._correction is not None:
            # Fallback (C.3): the correction token, then its continuation after the slot the
            # next target token (the root) substituted.
            m, x = self._correction
            j = snap.find(x, m, m + self.span)
            if j is not None and j + 1 < len(snap):
                anchor = j + 1
        if anchor is None:
            return Call(root=self.root, k1_reason=self._why_unaligned(snap), cursor_before=before)
        start = anchor + 1
        chain = snap.tokens(start, start + n)
        if chain and self.threshold is not None:
            confs = tuple(snap.confidence(i) for i in range(start, start + len(chain)))
            if self.confidence_required and any(c is None for c in confs):
                raise ValueError(
                    f"threshold: source {snap.source_id!r} publishes no confidences; "
                    "confidence stopping needs them (set threshold to null)"
                )
            chain = chain[: confident_prefix(confs, self.threshold)]
        if self.leave_eos:
            chain = chain[: before_eos(chain, self.eos_id)]  # the bonus is the target's own EOS
        reason: K1Reason | None = None
        if not chain:
            reason = "exhausted" if snap.complete else "not_ready"
            if self._tentative:  # nothing to test an unconfirmed match with: do not move to it
                self._tentative = False
                return Call(root=self.root, k1_reason=reason, cursor_before=before)
        return Call(
            root=self.root,
            chain=chain,
            provenance=tuple(range(start, start + len(chain))),
            k1_reason=reason,
            ready=max(0, len(snap) - start),
            cursor_before=before,
            anchor=anchor,
        )

    def _why_unaligned(self, snap: Snapshot) -> K1Reason:
        if snap.complete and self.cursor.cursor >= len(snap):
            return "exhausted"
        if self.cursor.expected >= len(snap):
            return "not_ready"
        return "no_match"

    def _after(self, call: Call, verdict: Verdict) -> int | None:
        tentative, self._tentative = self._tentative, False
        if tentative and call.anchor is not None and verdict.accepted == 0 and verdict.outcome == "correction":
            # A guessed alignment the target refuted at once: as if nothing had matched (guard).
            self.cursor = self.cursor.after_call(None, 0, self.lookback)
            self._processing, self._correction = False, None
            return self.cursor.cursor
        self.cursor = self.cursor.after_call(call.anchor, verdict.accepted, self.lookback)
        rejected = verdict.outcome == "correction" and verdict.accepted < len(call.chain)
        self._processing = rejected and self.anchor_order == ANCHOR_NEXT_TOKEN
        if self._processing:
            self._correction = (self.cursor.cursor, cast(int, verdict.next_root))  # a correction is a next root
        elif call.k1_reason != "correction":
            self._correction = None  # the fallback serves only the round after the correction step
        return self.cursor.cursor
