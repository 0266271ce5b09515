"""Candidate alignment: the read cursor over published candidates (paper Appendix C.3).

Adapted from SpecASR's local continuation matching to a target-decoupled buffer. The producer
never hears about it: only the cursor moves, and published tokens never change.

State (``ReadCursor``):

* ``cursor`` -- the **read cursor**: the first eligible buffer position. Positions below it are
  **retired** and never proposed again. It only moves forward (C.1, C.3).
* ``expected`` -- the buffer position where the current **known root** is expected if the
  producer and the target advanced together since the last match (``expected >= cursor``).

At each round the **alignment anchor** is the known root. We look for it among the eligible
published positions, nearest the expected slot first (see ``find_anchor``). A match at ``j``
makes ``buffer[j+1:]`` the candidate chain. The cases of C.3 fall out of that rule:

* full acceptance -- the bonus is expected right after the last candidate (the cursor moves
  there);
* rejection at position ``m`` -- the correction is expected at ``m`` (``cursor = m``). By the
  paper's order (``ANCHOR_NEXT_TOKEN``, Fig. 4c) the correction is processed first in a plain
  step, and the next target token is the first anchor: if it equals the candidate at ``m`` the
  target **inserted** a token and that position stays eligible; otherwise a bounded local search
  looks for it ahead (**substitution**, or a **deletion** when the producer had extra tokens),
  then for the correction token, whose continuation after the substituted slot is proposed. Our
  variant ``ANCHOR_CORRECTION_FIRST`` searches the correction itself first, which saves the plain
  step when the producer had an extra token;
* no match -- a plain step; the expected slot advances with the target but the read cursor stays
  put, so a producer that lacks several target tokens (the target says "Seven of clubs" where the
  producer wrote "7 of clubs") is found again once the target catches up. An unmatched position
  retires once the target is ``lookback`` plain steps past its expected slot, so the search stays
  bounded (C.3: a bounded local search; unmatched positions retire).

A repeated token can anchor at an unhelpful position; that costs verification work, never
exactness, because every reused token is verified again (C.4, condition 3).

**Guarded anchor** (beyond the paper; ``find_guarded``). A match away from the expected
slot whose published predecessor differs from the token committed before the root is *tentative*.
The paper's rule moves the read cursor past any anchor whose chain was verified, so one such
spurious match (a frequent token, a comma) retires the true alignment for good and the scheme
decodes alone until the target catches up (evidence: docs/adaptive.md, "Guarded anchor").
A tentative anchor is still verified; if its first candidate is rejected, the round is treated as
unmatched -- the cursor does not move past it (``As2d(guard=True)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from .buffer import Snapshot

DEFAULT_ALIGN_SPAN = 8  # alignment search span (C.3): slots searched ahead of the expected one
AnchorOrder = Literal["next_token", "correction_first"]
ANCHOR_NEXT_TOKEN: Final = "next_token"  # the paper's order after a rejection (C.3, Fig. 4c); the default
ANCHOR_CORRECTION_FIRST: Final = "correction_first"  # ours: search the correction token before processing it
ANCHOR_ORDERS: tuple[str, ...] = (ANCHOR_NEXT_TOKEN, ANCHOR_CORRECTION_FIRST)


@dataclass(frozen=True, slots=True)
class ReadCursor:
    cursor: int = 0
    expected: int = 0

    def find_anchor(self, snap: Snapshot, root: int, span: int) -> int | None:
        """Eligible published position holding ``root``, nearest the expected one, or ``None``.

        Order: the slot just before the expected one (a target insertion keeps the mismatch
        slot, C.3), the expected slot, then forward up to ``span`` slots, then back to the read
        cursor (positions not yet retired, e.g. after a multi-token insertion). Every candidate
        is at or after the read cursor, so an anchor never moves it backwards.
        """
        c, e = self.cursor, self.expected
        j = snap.find(root, max(c, e - 1), e + span)
        return j if j is not None else snap.rfind(root, c, e - 1)

    def find_guarded(self, snap: Snapshot, root: int, before: int | None, span: int) -> tuple[int | None, bool]:
        """``find_anchor``'s search, preferring a *confirmed* match: at the expected slot (or the one just
        before it), or preceded by ``before`` (the token committed before the root). Returns the first
        confirmed position in ``find_anchor``'s order, else its first match flagged tentative (``True``)."""
        c, e = self.cursor, self.expected
        n = len(snap)
        first = None
        for j in (*range(max(c, e - 1), min(e + span, n)), *range(min(e - 2, n - 1), c - 1, -1)):
            if snap[j] != root:
                continue
            if e - 1 <= j <= e or before is None or j == 0 or snap[j - 1] == before:
                return j, False
            if first is None:
                first = j
        return first, first is not None

    def after_call(self, anchor: int | None, accepted: int, lookback: int = 1) -> ReadCursor:
        """Move the cursor after a target call that used ``accepted`` chain candidates."""
        if anchor is not None:
            nxt = anchor + 1 + accepted  # bonus slot on full acceptance, else the mismatch slot
            return ReadCursor(nxt, nxt)
        nxt = self.expected + 1  # the target advanced alone
        return ReadCursor(max(self.cursor, nxt - lookback), nxt)
