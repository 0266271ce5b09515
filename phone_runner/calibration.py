"""Calibration on a phone (paper D.2): the runner's ``measure`` lines -> a device profile YAML.

"Measured" is said only of numbers a real engine (``torch``, ``mnn``) timed by running model
forwards. The reference engine has no model: it answers with the base profile's own prices, so
its "calibration" checks the protocol end to end and is labelled ``protocol check`` throughout
(:data:`PROTOCOL_CHECK`); ``calibrate_phone`` refuses to write it as a device profile unless asked.

The verify width sweep (K1-K16 at prefix offsets 0/64/128, idle and with the producer running),
the target step, the serial drafter's forward, ASP paired-branch / probability-row / KV refresh
costs and each source's service time are medians over the repetitions, each written as
``{v, source: "measured on <model> (serial <hash>) <date>, n=<n>, median, IQR <a>-<b> ms"}``.
With a real engine, ``calibrate_phone`` also runs As²d natively on its calibration window; the
producer's publications there give its coexistence factor, growth and startup as on the host
(R_LIVE, R_GROWTH: ``live_producer``), and its calls the verifier's cost at each width beside the
producer that it called often enough (R_LIVE: ``live_concurrent``): what replay must predict is the
producer beside the target in a decode loop, which a synthetic load beside the verify sweep stresses
differently. What the
runner does not measure (loop residual, queue, alignment, publication costs) comes from a base
profile under a stated ``derived:`` rule.
"""

from __future__ import annotations

import datetime
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl
import yaml

from workbench.replay.profile import DeviceProfile, parse_profile

REAL_ENGINES = ("torch", "mnn")
PROTOCOL_CHECK = "protocol check"
RUNNER_PREFILL_RULE = "R_PREFILL_RUNNER"


def provenance(engine: str, model: str, serial_hash: str, date: str) -> str:
    """The ``source`` text of a fitted number: measured (real engine) or a protocol check (reference)."""
    if engine in REAL_ENGINES:
        return f"measured on {model} (serial {serial_hash}) {date} by calibrate_phone, {engine} engine"
    return (f"{PROTOCOL_CHECK} on {model} (serial {serial_hash}) {date}: the {engine} engine echoed the base "
            "profile's prices, nothing was measured")


def calibration_plan(cfg: Mapping[str, Any] | None = None) -> dict[str, Any]:
    c = dict(cfg or {})
    return {"widths": list(c.get("widths", range(1, 17))), "offsets": list(c.get("offsets", [0, 64, 128])),
            "reps": int(c.get("reps", 5)), "warmups": int(c.get("warmups", 1)),
            "with_producer": list(c.get("with_producer", [False, True])),
            "draft_forward": bool(c.get("draft_forward", True)), "asp": bool(c.get("asp", True)),
            "producer_forward": bool(c.get("producer_forward", True)),
            "chunk_sources": list(c.get("chunk_sources", []))}


def _stat(xs: list[float], where: str) -> dict[str, Any]:
    q = statistics.quantiles(xs, n=4) if len(xs) >= 2 else [xs[0], xs[0], xs[0]]
    return {"v": round(statistics.median(xs), 6),
            "source": f"{where}, n={len(xs)}, median, IQR {q[0]:.4g}-{q[2]:.4g} ms"}


BASE_RULE = "R_BASE"  # a field calibrate_phone does not measure: copied from the base profile
_DERIVED = {"derived": BASE_RULE}


@dataclass(frozen=True)
class _Fit:
    """What every number of one fit shares: the runner's ``measure`` rows, the provenance text each
    fitted number's ``source`` starts with, and the engine that ran them."""

    measures: pl.DataFrame
    where: str
    engine: str

    @property
    def real(self) -> bool:
        """Only a real engine's numbers are measured; the reference engine echoes the base profile."""
        return self.engine in REAL_ENGINES

    def ms(self, op: str, **eq: Any) -> list[float]:
        """The ``ms`` of the rows of ``op`` whose columns equal ``eq`` (``None``: the column is null)."""
        f = self.measures.filter(pl.col("op") == op)
        for k, v in eq.items():
            f = f.filter(pl.col(k).is_null() if v is None else pl.col(k) == v)
        return [float(x) for x in f["ms"]]


def _base_num(base_raw: Mapping[str, Any], path: list[str]) -> dict[str, Any]:
    node: Any = base_raw
    for p in path:
        node = node[p]
    return {"v": node["v"], **_DERIVED}


def fit_profile(measures: pl.DataFrame, base: DeviceProfile, base_raw: Mapping[str, Any], *, name: str,
                model: str, serial_hash: str, engine: str, date: str | None = None,
                publications: pl.DataFrame | None = None, anchor_window: str | None = None,
                rounds: pl.DataFrame | None = None) -> dict[str, Any]:
    """A ``device-profile/1`` mapping from ``measure`` rows (D.2); validated before it is returned.
    ``engine``: the engine the runner's header names (only a real one makes the numbers measured).
    ``publications``: a native As²d run's publication records (``live_producer``); ``rounds``: its round
    records, which price the verifier beside the producer (``live_concurrent``).
    ``anchor_window``: the calibration window the native target-only runs decoded; with a real engine
    their time per round is also the drift anchor (``anchor_ms``, ``workbench.replay.drift``) that
    ``native_phone`` probes again before each configuration, and the producer's interval per token in
    the As²d runs there (``publications``) the producer's own anchor (``anchor_producer_ms``)."""
    date = date or datetime.date.today().isoformat()
    fit = _Fit(measures, provenance(engine, model, serial_hash, date), engine)
    widths, idle, conc = _verifier(fit, publications, rounds)
    step = fit.ms("target_step")
    sources = {sname: _fit_source(fit, sname, spec, base, publications) for sname, spec in base_raw["sources"].items()}
    label = "measured" if fit.real else PROTOCOL_CHECK
    raw: dict[str, Any] = {
        "schema": "device-profile/1", "name": name, "device": model,
        "description": f"source: {label}. {fit.where}. Verify widths {widths[0]}-{widths[-1]}; fields marked "
                       f"derived: {BASE_RULE} come from base profile {base.name!r}.",
        # the base's own rules travel with the base fields copied below (a source's growth rule, ...)
        "rules": {**dict(base_raw.get("rules") or {}),
                  BASE_RULE: f"Not measured by calibrate_phone: taken from the base profile {base.name} "
                             f"({base.file}).",
                  RUNNER_PREFILL_RULE: "The phone runners charge the producer's operation 0 (its prompt prefill) "
                                       "on the clock (phone_runner/PROTOCOL.md, pricing)."},
        "target_step_ms": (_stat(step, fit.where + ", native target-only runs: decode time per round") if step
                           else {"v": idle[1]["v"], "source": idle[1]["source"]}),
        "loop_residual_ms": _base_num(base_raw, ["loop_residual_ms"]), "queue_ms": _base_num(base_raw, ["queue_ms"]),
        "alignment_ms": _base_num(base_raw, ["alignment_ms"]),
        "verifier": {"idle_ms": idle,
                     "concurrent": {"ms": conc, "missing": "median_ratio"} if conc
                     else {"factor": {"v": 1.0, **_DERIVED}, "missing": "median_ratio"}},
        "sources": sources, "serial_drafter": base.serial_drafter,
    }
    if step and anchor_window and fit.real:
        raw.update(_anchors(fit, step, anchor_window, publications))
    asp = _asp(fit)
    if asp is not None:
        raw["asp"] = asp
    parse_profile(raw, file=f"conf/device/{name}.yaml (fitted)")  # refuse to write an invalid profile
    return raw


def _verifier(fit: _Fit, publications: pl.DataFrame | None, rounds: pl.DataFrame | None
              ) -> tuple[list[int], dict[int, dict[str, Any]], dict[int, dict[str, Any]]]:
    """The verify sweep's widths, its idle cost per width (offsets pooled) and its cost beside the
    producer: the sweep's synthetic load, overridden by a real engine's native As²d calls where they
    are many enough (R_LIVE, ``live_concurrent``). No idle width is an error: nothing to fit."""
    widths = sorted({int(k) for k in fit.measures.filter(pl.col("op") == "verify")["width"].to_list()})
    idle = {k: _stat(fit.ms("verify", width=k, concurrent=False), fit.where + " (offsets pooled)") for k in widths
            if fit.ms("verify", width=k, concurrent=False)}
    conc = {k: _stat(fit.ms("verify", width=k, concurrent=True), fit.where + " (producer running)") for k in widths
            if fit.ms("verify", width=k, concurrent=True)}
    if rounds is not None and publications is not None and fit.real:
        conc.update(live_concurrent(rounds, publications, fit.where))
    if not idle:
        raise ValueError("calibration: the runner reported no idle verify widths; nothing to fit")
    return widths, idle, conc


def _fit_source(fit: _Fit, sname: str, spec: Mapping[str, Any], base: DeviceProfile,
                publications: pl.DataFrame | None) -> dict[str, Any]:
    """One source of the base profile, its numbers marked derived, then overridden by what was
    measured: its idle service (the serial drafter's own forward where timed), its coexistence factor
    beside the verify sweep (D.2.1) and, with a real engine, as it ran beside the target (R_LIVE,
    R_GROWTH, ``live_producer``)."""
    node = {k: {"v": v["v"], **_DERIVED} if isinstance(v, dict) and "v" in v else v for k, v in spec.items()}
    kind = spec["kind"]
    op, key = ("chunk_service", "chunk_service_ms") if kind == "chunk" else ("producer_forward", "forward_ms")
    got, beside = fit.ms(op, source=sname, concurrent=False), fit.ms(op, source=sname, concurrent=True)
    if sname == base.serial_drafter and fit.ms("draft_forward", source=sname):
        got = fit.ms("draft_forward", source=sname)
    if got:
        node[key] = _stat(got, fit.where)
    if got and beside:  # D.2.1: the producer's service beside the verifier over its idle service
        node["concurrent_factor"] = {
            "v": round(statistics.median(beside) / statistics.median(got), 4),
            "source": f"{fit.where}: median per-token {key[:-3]} beside the verify sweep (n={len(beside)}) over "
                      f"idle (n={len(got)})"}
    live = (live_producer(publications.filter(pl.col("source_id") == sname), node[key]["v"], fit.where)
            if publications is not None and kind != "chunk" and fit.real else None)
    if live:
        node.update(live)
    if kind != "chunk":  # whatever the base says, a runner charges operation 0 on the clock (PROTOCOL.md)
        node["prefilled"] = {"v": False, "derived": RUNNER_PREFILL_RULE}
    return node


def _anchors(fit: _Fit, step: list[float], anchor_window: str,
             publications: pl.DataFrame | None) -> dict[str, Any]:
    """The drift anchors ``native_phone`` probes again (D.3, ``workbench.replay.drift``): the native
    target-only time per round on the calibration window, and the producer's interval per token
    there in the As²d runs, where they published."""
    out: dict[str, Any] = {
        "anchor_ms": _stat(step, fit.where + ", native target-only runs on anchor_window: decode time per round "
                                             "(drift anchor)"),
        "anchor_window": anchor_window}
    beside = producer_interval_ms(publications, anchor_window) if publications is not None else []
    if beside:  # the producer's own core drifts apart from the target's (workbench.replay.drift)
        out["anchor_producer_ms"] = _stat(beside, fit.where + ", native As2d runs on anchor_window: the producer's "
                                                              "interval per token beside the target (producer drift "
                                                              "anchor)")
    return out


def _asp(fit: _Fit) -> dict[str, Any] | None:
    """ASP's paired-branch, probability-row and per-width KV refresh costs, where the runner timed the
    first two (a refresh it did not time costs nothing)."""
    paired, rows = fit.ms("asp_paired"), fit.ms("asp_prob_row")
    if not (paired and rows):
        return None
    refresh = {int(k): _stat(fit.ms("asp_refresh", width=int(k)), fit.where)
               for k in sorted({int(x) for x in fit.measures.filter(pl.col("op") == "asp_refresh")["width"]})}
    return {"paired_branch_ms": _stat(paired, fit.where), "prob_row_ms": _stat(rows, fit.where),
            "kv_refresh_ms": refresh or {1: {"v": 0.0, **_DERIVED}}}


def live_producer(publications: pl.DataFrame, op_idle: float, where: str) -> dict[str, Any]:
    """The producer as it ran beside the target in native As²d runs (the host's R_LIVE and R_GROWTH,
    ``workbench.native.fit``): per-token publication intervals (each token of a batch its share) as a
    line in stream position; coexistence factor = the line at ``ref_tokens`` over the idle per-token
    cost ``op_idle``; startup = the first publication after the clock minus the operations on the line
    before it.
    Empty when the runs published too little to fit a line."""
    from workbench.native.episodes import SAMPLE_SCHEMA, publication_rows
    from workbench.native.publication_curve import publication_curve

    rows: list[dict[str, Any]] = []
    for (wid, rep), times in token_times(publications):
        rows += publication_rows(wid, "as2d", rep, times)
    raw = pl.DataFrame(rows, schema=SAMPLE_SCHEMA)
    curve = publication_curve(raw)
    if curve is None or op_idle <= 0:
        return {}
    src = f"{where}, n={curve.n} native As2d publication intervals"
    first = raw.filter(pl.col("kind") == "producer_first")
    out: dict[str, Any] = {
        "concurrent_factor": {"v": round(curve.at(curve.ref) / op_idle, 4),
                              "source": f"{src}, their line at ref_tokens / idle per-token time (R_LIVE)"},
        "growth": {"per_token": {"v": round(curve.growth_per_token(), 6),
                                 "source": f"{src}, least squares slope over the interval at ref_tokens (R_GROWTH)"},
                   "ref_tokens": {"v": round(curve.ref, 2), "source": f"{src}, median stream position (R_GROWTH)"}}}
    if first.height:
        out["startup_ms"] = {"v": round(curve.lead_ms(first), 4),
                             "source": f"{where}, n={first.height} native As2d runs, median first publication "
                                       "after the clock minus the operations on the line before it (R_LIVE)"}
    return out


def live_concurrent(rounds: pl.DataFrame, publications: pl.DataFrame, where: str) -> dict[int, dict[str, Any]]:
    """The verifier beside the producer as it ran in native As²d runs (the host's R_LIVE,
    ``workbench.native.fit.live_widths``): per width, the median duration of the calls that started
    before their run's last publication (the phone's lines do not say when the producer stopped; it ran
    at least until then), where there are at least ``LIVE_MIN_CALLS``. Why: a sweep's repeated call
    on one context runs otherwise than a decode loop's, and replay must price the loop's calls."""
    from workbench.native.fit import LIVE_MIN_CALLS

    if not rounds.height or not publications.height:
        return {}
    keys = ["window_id", "repetition"]
    last = publications.group_by(keys).agg(pl.col("publish_time").max().alias("last_publication"))
    calls = rounds.join(last, on=keys).filter(pl.col("t_start") < pl.col("last_publication"))
    out = {}
    for (k,), g in calls.group_by("width"):
        got = (1000 * (g["t_end"] - g["t_start"])).to_list()
        if len(got) >= LIVE_MIN_CALLS:
            out[int(k)] = _stat(got, f"{where}, native As2d calls beside the producer at this width (R_LIVE)")
    return dict(sorted(out.items()))


def token_times(publications: pl.DataFrame) -> list[tuple[tuple[str, int], list[float]]]:
    """Each run's publication time per published token, in stream order: a batch's tokens all at its
    time. One entry per (window, repetition)."""
    out = []
    for (wid, rep), g in publications.sort("offset").group_by("window_id", "repetition", maintain_order=True):
        out.append(((str(wid), int(rep)),
                    [float(t) for t, toks in zip(g["publish_time"], g["tokens"], strict=True) for _ in toks]))
    return out


def producer_interval_ms(publications: pl.DataFrame, window_id: str) -> list[float]:
    """The producer's interval per token after its first publication (ms), one per As²d run on
    ``window_id``: the host's ``producer_token`` statistic (``native.episodes.producer_token_ms``),
    which the profile's ``anchor_producer_ms`` is the calibration median of and ``native_phone``'s
    producer probe measures again. Runs with too few tokens after the first publication give none."""
    from workbench.native.episodes import producer_token_ms

    got = [producer_token_ms(times) for (wid, _), times in token_times(publications) if wid == window_id]
    return [v for v in got if v is not None]


def profile_yaml(raw: Mapping[str, Any]) -> str:
    kind = "measured" if str(raw.get("description", "")).startswith("source: measured") else \
        f"a {PROTOCOL_CHECK} (reference engine, NOT measured)"
    head = f"# Device profile from a phone, {kind}, by `experiment=calibrate_phone` (phone_runner, paper D.2).\n"
    return head + yaml.safe_dump(dict(raw), sort_keys=False, width=110)
