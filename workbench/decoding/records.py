"""Round records: the one event vocabulary shared by the native and the replay clocks.

A **round** is one target call. The scheme's plan for it is a ``Call``; what the verification
rule commits is a ``RoundRecord``. Drivers add times (``t_decide``, ``t_start``, ``t_end``) and
never change the token fields, so metrics, audits and figures do not care which clock ran.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, NamedTuple

# Why a round is a plain step (K = 1). ``None`` for K > 1.
# ``correction``: As²d processes a correction in a plain step before realigning (C.3, Fig. 4c).
K1Reason = Literal["target_only", "not_ready", "no_match", "exhausted", "output_cap", "confidence", "drafter",
                   "correction", "cost"]
Outcome = Literal["correction", "bonus", "eos", "cap"]

FRESH = -1  # provenance of a token a prefix-conditioned drafter proposed this round
RECYCLED = -2  # provenance of a token reused from a rejected draft (ASP recycling)
LOOKAHEAD = -3  # provenance of a token drafted beside the previous target call (prefix lookahead)
SOURCE_STRIDE = 1 << 24  # stored provenance = source * stride + position (positions stay far below)


class SourcePosition(NamedTuple):
    """Which published token a candidate is: source ``source``'s buffer position ``position``.

    Records and files keep one integer per chain token (``encode``): the plain position for the
    first (or only) source, ``source * SOURCE_STRIDE + position`` for the others; ``FRESH`` and
    ``RECYCLED``, ``LOOKAHEAD`` (negative) name no buffer and pass through unchanged."""

    source: int
    position: int

    def encode(self) -> int:
        return self.position + self.source * SOURCE_STRIDE if self.position >= 0 else self.position

    @classmethod
    def decode(cls, provenance: int) -> SourcePosition:
        if provenance < 0:
            return cls(0, provenance)
        source, position = divmod(provenance, SOURCE_STRIDE)
        return cls(source, position)


@dataclass(frozen=True, slots=True)
class DraftWork:
    """Serial drafting work a round needed before its target call (priced by replay)."""

    forwards: int = 0  # single-sequence drafter forwards
    catchup: int = 0  # committed tokens the drafter's KV lacked
    paired_forwards: int = 0  # ASP masked two-query (old/new branch) forwards
    prob_rows: int = 0  # rows whose softmax confidence was computed
    refresh_width: int = 0  # batched KV refresh of a recycled suffix


NO_WORK = DraftWork()


# Records are built once per round on replay's hot path; frozen dataclasses cost ~2x to build,
# so immutability is by convention here (tuples for every sequence; drivers use ``timed``).
@dataclass(slots=True)
class Call:
    """A scheme's decision for the next target call: known root plus a chain."""

    root: int
    chain: tuple[int, ...] = ()
    provenance: tuple[int, ...] = ()  # buffer position per chain token, or FRESH / RECYCLED / LOOKAHEAD
    k1_reason: K1Reason | None = None
    ready: int = 0  # usable candidates available after the root before the budget cut
    work: DraftWork = NO_WORK
    cursor_before: int | None = None
    anchor: int | None = None  # buffer position matched to the root, if any
    confidences: tuple[float, ...] | None = None
    # Drafting that runs beside this target call, not before it (prefix lookahead's next proposal);
    # a priced clock charges it on the drafter while the call runs. Records keep only ``work``.
    overlap: DraftWork = NO_WORK

    @property
    def width(self) -> int:
        return 1 + len(self.chain)


@dataclass(slots=True)
class RoundRecord:
    """What one target call did. ``committed`` lists the tokens it made known, in order."""

    round: int
    scheme: str
    width: int
    root: int
    chain: tuple[int, ...]
    provenance: tuple[int, ...]
    k1_reason: K1Reason | None
    ready: int
    accepted: int
    committed: tuple[int, ...]
    outcome: Outcome
    next_root: int | None
    cursor_before: int | None
    cursor_after: int | None
    work: DraftWork = field(default=NO_WORK)
    t_decide: float = float("nan")
    t_start: float = float("nan")
    t_end: float = float("nan")

    def timed(self, t_decide: float, t_start: float, t_end: float) -> RoundRecord:
        return replace(self, t_decide=t_decide, t_start=t_start, t_end=t_end)

    def as_row(self) -> dict[str, Any]:
        """Flat dict for a parquet row (lists stay lists; work fields are prefixed)."""
        row = asdict(self)
        work = row.pop("work")
        row.update({f"work_{k}": v for k, v in work.items()})
        for key in ("chain", "provenance", "committed"):
            row[key] = list(row[key])
        return row


Stage = tuple[str, str, float, float, int]  # resource, stage, start, end, round (-1: none)


def round_stages(i: int, work: DraftWork, width: int, t_decide: float, t_start: float, t_end: float,
                 after: str = "", after_s: float = 0.0) -> list[Stage]:
    """Stage intervals of one round (D.2.7), labelled by the work done, never by scheme name.

    Before the call: serial drafting on the producer resource if the round drafted, else the
    verifier's alignment/bookkeeping. The call itself: ``verify`` when candidates ride along,
    ``step`` for a plain K = 1 step. After it, optional loop or queue work (replay's prices).
    """
    out: list[Stage] = []
    if t_start > t_decide:
        drafted = work.forwards or work.paired_forwards or work.prob_rows or work.refresh_width
        out.append(("producer", "draft", t_decide, t_start, i) if drafted
                   else ("verifier", "align", t_decide, t_start, i))
    out.append(("verifier", "verify" if width > 1 else "step", t_start, t_end, i))
    if after_s:
        out.append(("other", after, t_end, t_end + after_s, i))
    return out


ROUND_COLUMNS: tuple[str, ...] = tuple(
    [f for f in RoundRecord.__dataclass_fields__ if f != "work"]
    + [f"work_{f}" for f in DraftWork.__dataclass_fields__]
)
