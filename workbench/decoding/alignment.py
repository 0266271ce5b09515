"""Candidate alignment: the read cursor over published candidates (paper Appendix C.3).

Adapted from SpecASR's local continuation matching to a target-decoupled buffer. The producer
never hears about it: only the cursor moves, and published tokens never change.

State (``ReadCursor``):

* ``cursor`` -- the buffer position where the current **known root** is expected.
* ``floor`` -- positions below it are **retired** and never proposed again.

At each round the **alignment anchor** is the known root. We look for it among the eligible
published positions ``[floor, cursor + span)``, nearest the expected slot first (see
``find_anchor``). A match at ``j`` makes ``buffer[j+1:]`` the candidate chain. The cases of C.3
fall out of that one rule:

* full acceptance -- the bonus is expected right after the last candidate (``cursor`` moves
  there, ``floor`` with it);
* rejection at position ``m`` -- the correction is expected at ``m`` (``cursor = floor = m``).
  If the correction itself appears just ahead, the producer had an extra token (**deletion**)
  and its continuation is usable at once. Otherwise the target takes a plain step and the next
  target token becomes the anchor, with ``cursor = m + 1``: it may equal the candidate at the
  mismatch (``m``: the target **inserted** a token, so that position stays eligible), the one
  after it (**substitution**), or one further ahead;
* no match -- a plain step; the expected position advances with the target. Unmatched positions
  stay eligible for ``lookback`` steps, so a producer that lacks several target tokens (the
  target says "Seven of clubs" where the producer wrote "7 of clubs") is found again once the
  target catches up; older positions retire, so the search stays bounded and the cursor only
  moves forward.

A repeated token can anchor at an unhelpful position; that costs verification work, never
exactness, because every reused token is verified again (C.4, condition 3).
"""

from __future__ import annotations

from dataclasses import dataclass

from .buffer import Snapshot

DEFAULT_ALIGN_SPAN = 8  # alignment search span (C.3): slots searched ahead of the expected one


@dataclass(slots=True)
class ReadCursor:
    cursor: int = 0
    floor: int = 0

    def find_anchor(self, snap: Snapshot, root: int, span: int) -> int | None:
        """Eligible published position holding ``root``, nearest the expected one, or ``None``.

        Order: the slot just before the expected one (a target insertion keeps the mismatch
        slot, C.3), the expected slot, then forward up to ``span`` slots, then back to the
        floor (positions the target passed without a match, e.g. after a multi-token insertion).
        """
        c, floor = self.cursor, self.floor
        j = snap.find(root, max(floor, c - 1), c + span)
        return j if j is not None else snap.rfind(root, floor, c - 1)

    def after_call(self, anchor: int | None, accepted: int, lookback: int = 1) -> ReadCursor:
        """Move the cursor after a target call that used ``accepted`` chain candidates."""
        if anchor is not None:
            nxt = anchor + 1 + accepted  # bonus slot on full acceptance, else the mismatch slot
            return ReadCursor(nxt, nxt)
        nxt = self.cursor + 1  # the target advanced alone
        return ReadCursor(nxt, max(self.floor, nxt - lookback))
