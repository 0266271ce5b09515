"""What a replay is asked to run (``ReplayConfig``) and what it returns (``ReplayResult``).

Kept apart from the engine so the audit and the catalog runner can name these types without
importing the engine (no import cycle). Scheme facts -- settings, defaults, labels -- come from
the decoding core's scheme catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from workbench.decoding import ROUND_COLUMNS, RoundRecord, SchemeSpec, Stage, round_stages, scheme_spec
from workbench.metrics import useful_tokens

# Column types of a rounds frame; a run that prefill already ended has no rounds but the same columns.
ROUND_SCHEMA: dict[str, pl.DataType] = {
    c: pl.List(pl.Int64) if c in ("chain", "provenance", "committed")
    else pl.Utf8 if c in ("scheme", "k1_reason", "outcome")
    else pl.Float64 if c.startswith("t_") else pl.Int64
    for c in ROUND_COLUMNS
}
STAGE_SCHEMA = {"resource": pl.Utf8, "stage": pl.Utf8, "start": pl.Float64, "end": pl.Float64,
                "round": pl.Int64}


@dataclass(frozen=True, slots=True, init=False)
class ReplayConfig:
    """One catalog entry: a scheme and its fixed settings (chosen before test, D.2.6).

    ``ReplayConfig("as2d", source="qwen", budget=7)``: settings are the catalog's, checked by
    name, with the catalog's defaults for the rest; ``cfg.budget`` reads one back.
    """

    scheme: str
    source: str | None  # candidate source for the decoupled schemes
    params: tuple[tuple[str, Any], ...]  # every setting of the scheme, sorted by name

    def __init__(self, scheme: str, source: str | None = None, **settings: Any) -> None:
        full = scheme_spec(scheme).settings(**settings)
        object.__setattr__(self, "scheme", scheme)
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "params", tuple(sorted(full.items())))

    def __getattr__(self, name: str) -> Any:
        for key, value in object.__getattribute__(self, "params"):
            if key == name:
                return value
        raise AttributeError(f"scheme {self.scheme!r} has no setting {name!r}")

    @property
    def spec(self) -> SchemeSpec:
        return scheme_spec(self.scheme)

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def label(self) -> str:
        return self.spec.config_label(self.source, **self.settings)

    @property
    def widest_width(self) -> int:
        return self.spec.widest_width(**self.settings)


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """One replayed window. Round times and stage intervals are kept as plain lists and turned
    into timed ``RoundRecord``s / stage tuples only on request (the oracle replays ~50k runs)."""

    window_id: str
    dataset: str
    config: ReplayConfig
    profile: str
    tokens: int  # committed target tokens (the whole reference, EOS included)
    time: float  # decode clock in seconds, drain included
    t_eos: float  # when the target committed its last token
    untimed: tuple[RoundRecord, ...] = field(repr=False)
    t_decide: list[float] = field(repr=False)
    t_start: list[float] = field(repr=False)
    t_end: list[float] = field(repr=False)
    after_s: float = 0.0  # per-round work after the call: loop residual or queue
    producer_spans: tuple[Stage, ...] = ()
    after: str = "loop"  # what the per-round work after the call is: the serial loop or the queue
    first_root: int | None = None  # prefill's token: the whole output when prefill already ended it
    eos_id: int | None = None  # the target's EOS: task TPS leaves it out (``useful_tokens``)

    @property
    def tps(self) -> float:
        # Prefill is off the decode clock, so an output it already ended costs no decode time.
        return self.tokens / self.time if self.time > 0 else float("inf")

    @property
    def output(self) -> tuple[int, ...]:
        """The committed output: prefill's root, then every round's committed tokens."""
        out = [self.first_root] if self.first_root is not None else [r.root for r in self.untimed[:1]]
        for r in self.untimed:
            out.extend(r.committed)
        return tuple(out)

    @property
    def useful_tokens(self) -> int:
        """Task TPS's numerator (D.1.2): without the first token, chosen in prefill, and a final EOS."""
        last = self.untimed[-1].committed[-1] if self.untimed and self.untimed[-1].committed else self.first_root
        return useful_tokens(self.tokens, self.eos_id is not None and last == self.eos_id)

    @property
    def records(self) -> tuple[RoundRecord, ...]:
        return tuple(r.timed(a, b, c) for r, a, b, c in
                     zip(self.untimed, self.t_decide, self.t_start, self.t_end, strict=True))

    @property
    def stages(self) -> tuple[Stage, ...]:
        """Completed stage intervals (D.2.7): resource, stage, start, end, round."""
        out: list[Stage] = []
        for r, a, b, c in zip(self.untimed, self.t_decide, self.t_start, self.t_end, strict=True):
            out += round_stages(r.round, r.work, r.width, a, b, c, self.after, self.after_s)
        return (*out, *self.producer_spans)

    def summary(self) -> dict:
        c = self.config
        return {"window_id": self.window_id, "dataset": self.dataset, "profile": self.profile,
                "config": c.label, "scheme": c.scheme, "source": c.source,
                "budget": c.spec.proposal_budget(**c.settings),
                "tokens": self.tokens, "useful_tokens": self.useful_tokens, "time": self.time,
                "rounds": len(self.untimed)}

    def rounds_frame(self) -> pl.DataFrame:
        rows = [r.as_row() for r in self.records]
        return pl.DataFrame(rows, schema=ROUND_SCHEMA).with_columns(
            pl.lit(self.window_id).alias("window_id"), pl.lit(self.config.label).alias("config"))

    def stages_frame(self) -> pl.DataFrame:
        df = pl.DataFrame(list(self.stages), schema=STAGE_SCHEMA, orient="row")
        return df.with_columns(pl.lit(self.window_id).alias("window_id"),
                               pl.lit(self.config.label).alias("config"), pl.lit(self.time).alias("T"))
