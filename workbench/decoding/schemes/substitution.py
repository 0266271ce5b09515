"""As²d with a substitution guess after a rejection (beyond the paper, C.3).

By the paper's order (C.3, Fig. 4c) a rejection at buffer slot ``m`` (correction ``x``) is
followed by one plain K = 1 step that only processes ``x``; the next target token then re-anchors.
The most common mismatch is a substitution (the producer heard one word differently), and then
the producer's continuation after ``m`` is still right. So this scheme guesses it: the round after
the rejection verifies ``x`` plus ``buffer[m+1 : m+1+b]`` in the same call, as if ``x`` stood at
``m`` (anchor ``m``). If the correction is the token published right after ``m``, the producer had one
extra token there instead, and the guess continues after the correction (anchor ``m + 1``). Every
guessed token is verified by the target like any reused token (C.4,
condition 3), so a wrong guess costs verify width, never exactness.

A guess whose first candidate is rejected tells us nothing was a substitution: the cursor is then
left exactly where the paper's plain correction step leaves it (``cursor = m``, ``expected = m+1``,
the correction remembered for the fallback search), so insertions and deletions re-anchor as before.
"""

from __future__ import annotations

from typing import cast

from ..alignment import ReadCursor
from ..records import Call
from ..verification import Verdict
from .as2d import As2d
from .asp import confident_prefix


class As2dSubstitution(As2d):
    name = "as2d_subst"

    def _guess(self, now: float, n: int) -> Call:
        """The correction plus the published candidates after the mismatch slot ``m``."""
        m = self.cursor.cursor  # mismatch slot: the rejection left the cursor there
        snap = self.source.snapshot(now)
        anchor = m
        if m + 1 < len(snap) and snap[m + 1] == self.root:
            # The correction is the next published token: the producer had one extra token at m, so
            # the continuation follows the correction, not m (one slot only -- searching the span finds
            # a frequent token by chance; docs/adaptive.md, "Substitution guess").
            anchor = m + 1
        start = anchor + 1
        chain = snap.tokens(start, start + n) if anchor < len(snap) else ()
        if chain and self.threshold is not None:
            confs = tuple(snap.confidence(i) for i in range(start, start + len(chain)))
            chain = chain[: confident_prefix(confs, self.threshold)]
        if not chain:  # nothing published after the slot: the paper's plain correction step
            return Call(root=self.root, k1_reason="correction", cursor_before=m)
        return Call(root=self.root, chain=chain, provenance=tuple(range(start, start + len(chain))),
                    ready=max(0, len(snap) - start), cursor_before=m, anchor=anchor)

    def plan(self, now: float) -> Call:
        if self._processing and self.chain_limit(self.budget) > 0:
            return self._guess(now, self.chain_limit(self.budget))
        return super().plan(now)

    def _after(self, call: Call, verdict: Verdict) -> int | None:
        if not self._processing or call.anchor is None:
            return super()._after(call, verdict)
        # A guess round: a first-slot rejection means no substitution -- leave the cursor as the
        # paper's correction step would and keep the correction for the fallback search.
        if verdict.accepted == 0 and verdict.outcome == "correction":
            m = cast(int, call.cursor_before)  # the mismatch slot, whichever slot the guess anchored at
            self.cursor = ReadCursor(m, m).after_call(None, 0, self.lookback)
            self._processing = False
            # _correction stays (m, x): the fallback serves the next round, as after a plain step.
            return self.cursor.cursor
        self._processing = False
        self._correction = None
        return super()._after(call, verdict)
