"""Target-only: the greedy reference decoder, one plain step (K = 1) per token."""

from __future__ import annotations

from ..records import Call
from .base import Scheme


class TargetOnly(Scheme):
    name = "target_only"

    def plan(self, now: float) -> Call:
        return Call(root=self.root, k1_reason="target_only")
