"""The kernel plan: how a decoder forward of K query rows runs cheapest on this machine (Appendix D.2).

For every width K the calibration measured, the plan names the linear kernel for a forward of exactly
K rows (``plain`` ``F.linear`` or ``packed`` oneDNN weights, ``models.packed_linear``) and the width
``rows >= K`` the forward is padded to: a wider forward can cost less than a narrower one (MKL's
few-row sgemm path against a wide weight), so the K real rows ride in it and the padding rows are
dropped (their logits and KV entries). Causal self-attention keeps the real rows' logits those of
the unpadded forward, to float rounding; exactness is still audited per run against target-only.

The plan is fitted from measured costs (``fit_plan``), never from a constant, and stored with its
provenance in the host profile (``kernel_plan:``, ``native/fit.py``). Torch-free: replay reads it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

PLAIN, PACKED = "plain", "packed"
PLAN_KERNELS = (PLAIN, PACKED)
# Pad only when the wider forward saves at least this share of the narrow one's cost: a smaller
# "saving" is within the sweep's noise, and an unpadded forward is the simpler one.
PAD_MARGIN = 0.03


@dataclass(frozen=True, slots=True)
class KernelChoice:
    """One width's entry: the kernel of a forward of exactly ``width`` rows, and the padded width."""

    kernel: str
    rows: int
    ms: float | None = None  # the planned forward's measured cost (the padded width's, best kernel)


@dataclass(frozen=True, slots=True)
class KernelPlan:
    """Width -> ``KernelChoice`` for the widths a calibration measured."""

    choices: Mapping[int, KernelChoice]

    def __post_init__(self) -> None:
        if not self.choices:
            raise ValueError("a kernel plan needs at least one width")
        for k, c in self.choices.items():
            if c.kernel not in PLAN_KERNELS or c.rows < k or c.rows not in self.choices:
                raise ValueError(f"kernel plan width {k}: {c} (kernel in {PLAN_KERNELS}, rows >= width, "
                                 "and the padded width planned too)")
        object.__setattr__(self, "choices", MappingProxyType(dict(sorted(self.choices.items()))))

    @property
    def widest(self) -> int:
        return max(self.choices)

    def kernel_for(self, rows: int) -> str:
        """The kernel of a forward of exactly ``rows`` rows; beyond the plan, the widest width's."""
        return self.choices[min(rows, self.widest)].kernel if rows >= 1 else PLAIN

    def rows_for(self, width: int, room: int | None = None) -> int:
        """The width a forward of ``width`` real rows runs at; never more than ``room`` rows (the
        decoder's positions left), and unpadded beyond the plan."""
        c = self.choices.get(width)
        rows = width if c is None else c.rows
        return width if room is not None and rows > room else rows

    def as_dict(self) -> dict[int, dict[str, object]]:
        return {k: {"kernel": c.kernel, "rows": c.rows} for k, c in self.choices.items()}


def fit_plan(costs: Mapping[tuple[str, int], float], margin: float = PAD_MARGIN) -> KernelPlan:
    """The plan from measured costs ``(kernel, width) -> ms`` (medians of one forward of that width).

    Per width, the cheaper kernel; then the cheapest width ``R >= K`` at its best kernel, taken only
    when it saves more than ``margin`` of K's own best cost."""
    widths = sorted({k for _, k in costs})
    best: dict[int, tuple[float, str]] = {}
    for k in widths:
        have = [(costs[(kern, k)], kern) for kern in PLAN_KERNELS if (kern, k) in costs]
        best[k] = min(have)
    choices = {}
    for k in widths:
        own = best[k][0]
        r = min((w for w in widths if w >= k), key=lambda w: (best[w][0], w))
        rows = r if best[r][0] < (1.0 - margin) * own else k
        choices[k] = KernelChoice(best[k][1], rows, round(best[rows][0], 4))
    return KernelPlan(choices)


__all__ = ["PACKED", "PAD_MARGIN", "PLAIN", "PLAN_KERNELS", "KernelChoice", "KernelPlan", "fit_plan"]
