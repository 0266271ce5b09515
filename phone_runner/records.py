"""Runner JSONL -> the project's records: round records, stage intervals, windows, audits.

Every line is validated (protocol v1) as it is read; a bad line fails with its line number.
A phone run then becomes, per (window, repetition), the same ``ReplayResult`` + publication
buffer that replay produces, so ``workbench.replay.audit.audit_run`` (exactness, readiness,
priced widths, round order) and ``workbench.metrics`` run on it unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from workbench.decoding import ROUND_COLUMNS, DraftWork, PublicationBuffer, RoundRecord

from .protocol import ProtocolError, validate_line

Key = tuple[str, int]  # (window_id, repetition)


@dataclass
class PhoneRun:
    """The validated lines of one runner invocation, grouped by type."""

    source: str
    header: dict[str, Any] | None = None
    lines: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    summary: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    def of(self, kind: str) -> list[dict[str, Any]]:
        return self.lines.get(kind, [])

    @property
    def finished(self) -> list[Key]:
        """Window repetitions whose closing ``window`` line arrived (kept across a failure)."""
        return [(w["window_id"], w["repetition"]) for w in self.of("window")]

    def add(self, obj: dict[str, Any], where: str) -> None:
        kind = obj["type"]
        if kind == "header":
            if self.header is not None:
                raise ProtocolError(where, "a second header line")
            self.header = obj
            return
        if self.header is None and kind != "error":  # a bad request is answered by an error line alone
            raise ProtocolError(where, f"a {kind} line before the header")
        if self.summary is not None or self.error is not None:
            raise ProtocolError(where, f"a {kind} line after the run's last line")
        if kind == "summary":
            self.summary = obj
        elif kind == "error":
            self.error = obj
        else:
            self.lines.setdefault(kind, []).append(obj)


def read_lines(lines: Iterable[str | bytes], source: str, run: PhoneRun | None = None,
               start: int = 1) -> PhoneRun:
    """Validate and collect JSONL lines (blank lines are refused like any other bad line)."""
    run = run or PhoneRun(source)
    for n, text in enumerate(lines, start):
        run.add(validate_line(text, n, source), f"{source} line {n}")
    return run


def read_jsonl(path: str | Path) -> PhoneRun:
    with open(path, "rb") as fh:
        return read_lines((raw.rstrip(b"\r\n") for raw in fh), str(path))


# ------------------------------------------------------------------------------------------
# records


def round_record(r: Mapping[str, Any]) -> RoundRecord:
    """One ``round`` line (or a rounds-frame row) as the core's ``RoundRecord``."""
    work = DraftWork(r["work_forwards"], r["work_catchup"], r["work_paired_forwards"], r["work_prob_rows"],
                     r["work_refresh_width"])
    return RoundRecord(r["round"], r["scheme"], r["width"], r["root"], tuple(r["chain"]), tuple(r["provenance"]),
                       r["k1_reason"], r["ready"], r["accepted"], tuple(r["committed"]), r["outcome"],
                       r["next_root"], r["cursor_before"], r["cursor_after"], work, r["t_decide"], r["t_start"],
                       r["t_end"])


def _by_key(rows: list[dict[str, Any]]) -> dict[Key, list[dict[str, Any]]]:
    out: dict[Key, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["window_id"], r["repetition"]), []).append(r)
    return out


def results(run: PhoneRun, datasets: Mapping[str, str] | None = None
            ) -> dict[Key, tuple[Any, PublicationBuffer | None]]:
    """Per finished window repetition: a ``ReplayResult`` built from the phone's lines and the
    publication buffer its producer reported (``None`` for serial schemes)."""
    from workbench.replay.result import ReplayConfig, ReplayResult

    assert run.header is not None, f"{run.source}: no header"
    sch = run.header["scheme"]
    cfg = ReplayConfig(sch["name"], source=sch.get("source"), **(sch.get("settings") or {}))
    rounds, stages, pubs = _by_key(run.of("round")), _by_key(run.of("stage")), _by_key(run.of("publication"))
    out: dict[Key, tuple[Any, PublicationBuffer | None]] = {}
    for w in run.of("window"):
        key = (w["window_id"], w["repetition"])
        recs = [round_record(r) for r in sorted(rounds.get(key, []), key=lambda r: r["round"])]
        spans = tuple((s["resource"], s["stage"], s["start"], s["end"], s["round"])
                      for s in stages.get(key, []) if s["round"] < 0)
        res = ReplayResult(w["window_id"], (datasets or {}).get(w["window_id"], ""), cfg,
                           run.header.get("engine", {}).get("kind", "phone"), w["tokens"], w["time"], w["t_eos"],
                           tuple(r.timed(float("nan"), float("nan"), float("nan")) for r in recs),
                           [r.t_decide for r in recs], [r.t_start for r in recs], [r.t_end for r in recs],
                           0.0, spans, "queue" if cfg.spec.decoupled else "loop")
        buf = None
        if cfg.spec.decoupled:
            plist = sorted(pubs.get(key, []), key=lambda p: p["offset"])
            src = plist[0]["source_id"] if plist else (cfg.source or "producer")
            buf = PublicationBuffer(src, plist[0]["producer_id"] if plist else "p0")
            for p in plist:
                buf.publish(p["tokens"], p["publish_time"], p["confidences"])
        out[key] = (res, buf)
    return out


def audit(run: PhoneRun, windows: Mapping[str, Any], profile: Any) -> int:
    """Exactness against each window's greedy reference, readiness of every buffered candidate,
    priced widths and round order -- ``workbench.replay.audit.audit_run`` on the phone's rounds.
    Returns the number of window repetitions audited; a violation raises."""
    from workbench.replay.audit import audit_run
    from workbench.replay.pricing import pricing_for

    price = pricing_for(profile)
    n = 0
    for (wid, _rep), (res, buf) in results(run).items():
        if wid not in windows:
            raise KeyError(f"{run.source}: window {wid!r} has no reference to audit against")
        audit_run(windows[wid], res, price, buf)
        n += 1
    return n


def frames(run: PhoneRun, extra: Mapping[str, Any] | None = None) -> dict[str, pl.DataFrame]:
    """Frames for ``workbench.metrics``: rounds (``ROUND_COLUMNS`` + keys), stages (+ ``T``),
    windows (tokens / time), publications and measures."""
    extra = dict(extra or {})
    lists = {"chain": pl.List(pl.Int64), "provenance": pl.List(pl.Int64), "committed": pl.List(pl.Int64),
             "tokens": pl.List(pl.Int64), "output": pl.List(pl.Int64), "confidences": pl.List(pl.Float64)}

    def frame(kind: str, cols: Iterable[str]) -> pl.DataFrame:
        rows = [{k: v for k, v in r.items() if k not in ("v", "type")} for r in run.of(kind)]
        if not rows:
            return pl.DataFrame()
        over = {k: v for k, v in lists.items() if isinstance(rows[0].get(k, 0), list) or
                (k in rows[0] and rows[0][k] is None and k == "confidences")}
        df = pl.DataFrame(rows, schema_overrides=over, infer_schema_length=None)
        order = [c for c in cols if c in df.columns]
        return df.select(order + [c for c in df.columns if c not in order]).with_columns(
            *(pl.lit(v).alias(k) for k, v in extra.items()))

    keys = ("window_id", "repetition", "config")
    out = {"rounds": frame("round", (*keys, *ROUND_COLUMNS)), "windows": frame("window", keys),
           "publications": frame("publication", keys[:2]), "measures": frame("measure", ("op", "width")),
           "stages": frame("stage", keys[:2])}
    if out["stages"].height and out["windows"].height:
        T = out["windows"].select("window_id", "repetition", pl.col("time").alias("T"), "config")
        out["stages"] = out["stages"].join(T, on=["window_id", "repetition"], how="left")
    return out
