"""The host profile fitted from calibration samples (paper D.2): medians of measured samples, or a
stated fit, each with its provenance (``{v, source}`` or ``{v, derived: <rule>}``).

``fit_profile`` reads the raw samples (``samples.SAMPLE_SCHEMA``, from ``sweep.py`` and the native
episodes) and the episodes' round records, and returns the profile mapping in the replay schema
(``replay/profile.py``). Each part of the profile has its own small fit below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, cast

import numpy as np
import polars as pl

from workbench.models.kernel_plan import fit_plan
from workbench.replay.profile import SCHEMA

from .context import concurrent_lines, context_fit
from .episodes import HostSetup
from .machine import cpu_model, engine_label, machine_fingerprint
from .publication_curve import GROWTH_SIGNIFICANCE, PublicationCurve, publication_curve
from .samples import MIN_PER_TOKEN, med
from .stage_speed import RULE as R_STAGE
from .stage_speed import at_anchor_speed
from .stage_speed import to_profile as stage_block
from .steadiness import RULE as R_STEADY
from .sweep import PROBE_WIDTHS

LIVE_MIN_CALLS = 5  # fewer native calls at a width than this: the sweep prices it
IDLE_SCHEMES = ("target_only", "sd", "asp")  # their verify calls run with no producer beside them

RULES = {
    "R_BATCH": "Publication batch size is the producer's configured batch_tokens (conf/model).",
    "R_SERIAL": "The serial drafter runs inside the verifier's loop: nothing to publish, its prefill "
                "is before the clock, and it never coexists with the target (factor 1).",
    "R_REFRESH": "ASP batched KV refresh at width K = serial draft forward * V(K)/V(1) of this file.",
    "R_LIVE": "The producer's coexistence factor and startup come from its publication times in the "
              "native As2d episodes of the calibration windows (what replay must predict); so does the "
              "verifier's cost at each width those episodes called often enough: beside the producer "
              "from As2d's calls that started while the producer ran, idle from target-only, SD and ASP "
              "calls (first calls left out; each call moved along its width's context slope to ref_tokens, "
              "where replay prices the width; beside the producer along the line of those calls themselves). "
              "The As2d episodes run on the calibration windows and on single dev clips, the two window "
              "shapes replay prices (a packed window's calls sit late in a long stream, a clip's early in a "
              "short one).",
    "R_KERNEL": "kernel_plan: per width, the cheaper linear kernel for exactly that many rows, and the "
                "padded width whose forward costs least (taken only when it saves more than "
                "models.kernel_plan.PAD_MARGIN); medians of the kernel sweep, idle. Every verifier cost "
                "in this file was measured under this plan.",
    "R_OPS": "The producer is priced per operation: one drafter forward (its prompt prefill is operation "
             "0). A cross-vocabulary producer (Tok_T) releases none, one or several target tokens per forward; "
             "each run records every published token's forward count, and every producer time in this file "
             "is per forward.",
    "R_PREFILL": "The native host driver starts the decode clock after the target's and the producer's "
                 "prompt prefill (A.3): the producer's operation 0 ran before the clock and is not charged.",
    "R_GROWTH": "The producer's publication interval beside the target grows with its stream position "
                "(attention over a longer context): a least-squares line over every per-forward publication "
                "interval of the native As2d episodes (slope 0 unless it exceeds twice its standard error; level: the "
                "median residual); growth.per_token is its slope over its value at ref_tokens, and the "
                "coexistence factor and startup are read from the same line.",
    "R_STEADY": R_STEADY,
    "R_STAGE": R_STAGE,
}



class FitNames(Protocol):
    """What the fit needs of the calibrated pair beyond its samples: a ``HostSetup``, or the names a
    stored profile records (``refit.py``)."""

    @property
    def source(self) -> str: ...

    @property
    def serial_source(self) -> str | None: ...

    @property
    def batch_tokens(self) -> int: ...


class Fit:
    """Samples and round records of one calibration, with the helpers every part's fit shares."""

    def __init__(self, raw: pl.DataFrame, rounds: pl.DataFrame, date: str) -> None:
        self.raw, self.date = raw, date
        self.rounds = rounds.with_columns((pl.col("t_start") - pl.col("t_decide")).alias("pre"),
                                          (pl.col("t_end") - pl.col("t_start")).alias("call"))

    def meas(self, xs: Sequence[float], what: str = "median") -> dict[str, Any]:
        return {"v": round(med(xs), 4), "source": f"measured on host {self.date}, n={len(xs)}, {what}"}

    def kind(self, k: str) -> pl.DataFrame:
        return self.raw.filter(pl.col("kind") == k)

    def config(self, *names: str) -> pl.DataFrame:
        return self.rounds.filter(pl.col("config").is_in(list(names)))

    def target_only(self) -> pl.DataFrame:
        return self.kind("episode").filter(pl.col("scheme") == "target_only")


# ------------------------------------------------------------------------------- verifier
def sweep_tables(f: Fit) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    """The width sweep's samples per width: (idle, beside the producer)."""
    ver = f.kind("verify")
    idle = {k: ver.filter((pl.col("width") == k) & ~pl.col("concurrent"))["ms"].to_list()
            for k in sorted(set(ver["width"].to_list()))}
    conc = {k: ver.filter((pl.col("width") == k) & pl.col("concurrent"))["ms"].to_list() for k in idle}
    return idle, conc


def with_positions(rounds: pl.DataFrame) -> pl.DataFrame:
    """``rounds`` with ``pos``: the committed tokens before each call (the prefill's one plus every earlier
    round's), the context length replay prices a call at (``engine._ContextClock``)."""
    keys = [k for k in ("window_id", "config", "rep") if k in rounds.columns]
    return rounds.sort(*keys, "round").with_columns(
        (1 + pl.col("committed").list.len().cum_sum().shift(1, fill_value=0).over(keys)).alias("pos"))


def live_widths(rounds: pl.DataFrame, sweep: dict[int, list[float]], date: str, what: str,
                context: dict[str, Any] | None = None, concurrent: bool = False) -> dict[int, dict[str, Any]]:
    """The verifier's cost per width: the median native call at that width among ``rounds`` of the
    calibration windows' episodes (R_LIVE), where they made at least ``LIVE_MIN_CALLS``; else the sweep's.
    A window's first call is left out: the context fit's cold surcharge prices it.

    With a ``context`` fit (the profile's ``verifier.context`` mapping) each call is first moved along its
    width's slope (``concurrent``: its concurrent slope where fitted) to ``ref_tokens``: replay prices a
    width's cost as its cost there, and the episodes' calls sit wherever the calibration window put them.
    Moved to zero or below (a steep slope fitted on noise), the width keeps the sweep's price.

    Why: the sweep's calls and the episodes' calls at the same width differ (beside the producer
    the sweep's synthetic load stresses the cores differently; idle, the sweep's repeated call on one
    context runs colder than a decode loop's), and replay must price the episodes' calls."""
    calls = with_positions(rounds).filter(pl.col("round") > 0) if rounds.height else rounds
    ref = context["ref_tokens"]["v"] if context else 0.0
    slopes = {k: e["v"] for k, e in context["slope_ms"].items()} if context else {}
    if context and concurrent:
        slopes.update({k: e["v"] for k, e in context.get("concurrent_slope_ms", {}).items()})
    out = {}
    for k, v in sweep.items():
        at = calls.filter(pl.col("width") == k) if calls.height else calls
        live = (1000 * at["call"] - slopes.get(k, 0.0) * (at["pos"] - ref)).to_list() if at.height else []
        moved = f" moved to {ref:g} committed tokens along its slope" if k in slopes else ""
        # A slope fitted on few or noisy calls can carry their median to zero or below: no price, so the
        # sweep's measured calls price the width instead.
        if len(live) >= LIVE_MIN_CALLS and med(live) > 0:
            out[k] = {"v": round(med(live), 4),
                      "source": f"fitted on host {date}, n={len(live)} native {what} at this width{moved}, median "
                                "(R_LIVE)"}
        elif v:
            out[k] = {"v": round(med(v), 4), "source": f"measured on host {date}, n={len(v)}, median"}
    return out


def beside_producer(rounds: pl.DataFrame) -> pl.DataFrame:
    """The calls of ``rounds`` that started while the producer ran (``NativeResult.producer_end``): once it
    stops, As²d's calls run alone on the machine and replay prices them idle, so they must not lower the
    price of a call beside it. Rounds recorded before the flag existed are taken whole."""
    return rounds.filter(pl.col("producer_running")) if "producer_running" in rounds.columns else rounds


def _with_sd(entry: dict[str, Any], sd: tuple[float, int] | None) -> dict[str, Any]:
    """Per-width dispersion (Fig. 8 error bars): sd of the width's residuals around its context line."""
    return entry if sd is None else {**entry, "sd": sd[0], "n": sd[1]}


def verifier_part(f: Fit) -> tuple[dict[str, Any], dict[str, Any]]:
    """(``verifier:`` mapping, ``target_step_ms`` entry): per-width costs, idle and concurrent, the
    context fit and the target-only step."""
    idle, conc = sweep_tables(f)
    fit = context_fit(f.kind("verify"), f.config("target_only"), f.date)
    ctx, sds = (fit.context, fit.sd) if fit is not None else (None, {})
    beside = beside_producer(f.config("as2d"))
    if ctx is not None:
        lines = concurrent_lines(with_positions(beside).filter(pl.col("round") > 0), f.date)
        ctx = {**ctx, "concurrent_slope_ms": lines} if lines else ctx
    to = f.target_only()
    step = fit.step if fit is not None else f.meas((to["ms"] / to["rounds"]).to_list(),
                                                   "median charged time per target-only round")
    verifier = {
        "idle_ms": {k: _with_sd(e, sds.get(k)) for k, e in live_widths(
            f.config(*IDLE_SCHEMES), idle, f.date, "idle calls (target-only, SD, ASP)", ctx).items()},
        "concurrent": {"ms": live_widths(beside, conc, f.date, "As2d calls beside the producer", ctx,
                                         concurrent=True),
                       "missing": "median_ratio"},
        **({"context": ctx} if ctx is not None else {}),
    }
    return verifier, step


def kernel_costs(raw: pl.DataFrame) -> tuple[dict[tuple[str, int], float], dict[int, int]]:
    """The kernel sweep's median forward per (kernel, width), and its sample count per width."""
    ker = raw.filter(pl.col("kind") == "kernel")
    costs = {(kern, k): med(g["ms"].to_list()) for (kern, k), g in ker.group_by("kernel", "width")}
    return costs, {k: g.height for (k,), g in ker.group_by("width")}


def kernel_plan_part(f: Fit) -> dict[int, dict[str, Any]] | None:
    """``kernel_plan:`` from the kernel sweep (R_KERNEL); None when the target has one kernel."""
    costs, n = kernel_costs(f.raw)
    if not costs:
        return None
    plan = fit_plan(costs)
    return {k: {"kernel": c.kernel, "rows": c.rows,
                "ms": {"v": c.ms, "source": f"measured on host {f.date}, n={n[c.rows]} kernel-sweep forwards "
                                            f"at width {c.rows}, median (R_KERNEL)"}}
            for k, c in plan.choices.items()}


# ------------------------------------------------------------------------------- loop work
def loop_part(f: Fit) -> dict[str, Any]:
    """Loop residual per serial round, and As²d's alignment (decision to call) and queue (call end to
    the next decision) per round."""
    serial = f.config("sd", "asp").group_by("window_id", "config", "rep").agg(
        ((pl.col("T").first() - (pl.col("t_end") - pl.col("t_decide")).sum()) / pl.len()).alias("loop"))
    a = f.config("as2d").sort("window_id", "rep", "round")
    q = a.with_columns((pl.col("t_decide").shift(-1).over("window_id", "rep") - pl.col("t_end")).alias("q"))
    return {
        "loop_residual_ms": f.meas((1000 * serial["loop"]).to_list(),
                                   "median per serial round of (T - draft - verify) / rounds"),
        "queue_ms": f.meas((1000 * q["q"].drop_nulls()).to_list(), "median As2d gap from a call's end to the next "
                                                                   "decision"),
        "alignment_ms": f.meas((1000 * a["pre"]).to_list(), "median As2d decision-to-call time"),
    }


# ------------------------------------------------------------------------------- producer
def _growth(f: Fit, curve: PublicationCurve) -> dict[str, Any]:
    src = f"fitted on host {f.date}, n={curve.n} native As2d publication intervals"
    how = "least squares slope" if curve.b else f"slope within {GROWTH_SIGNIFICANCE:g} standard errors of 0, taken as 0"
    return {"per_token": {"v": round(curve.growth_per_token(), 6), "source": f"{src}, {how} over "
                          "the interval at ref_tokens (R_GROWTH)"},
            "ref_tokens": {"v": round(curve.ref, 2), "source": f"{src}, median stream position (R_GROWTH)"}}


def _coexistence(f: Fit, op_idle: float, per_tok_conc: list[float],
                 curve: PublicationCurve | None = None) -> dict[str, Any]:
    """The producer's per-forward interval in the native As²d episodes over its idle per-forward time (R_LIVE):
    the synthetic load (a width sweep beside back-to-back passes) stresses the cores differently."""
    live = f.kind("producer_token").filter(pl.col("tokens") >= MIN_PER_TOKEN)["ms"].to_list()
    if curve is not None:
        return {"v": round(curve.at(curve.ref) / op_idle, 4),
                "source": f"fitted on host {f.date}, n={curve.n} native As2d publication intervals, their line at "
                          "ref_tokens / idle per-forward time (R_LIVE, R_GROWTH)"}
    if live:
        return {"v": round(med(live) / op_idle, 4),
                "source": f"fitted on host {f.date}, n={len(live)} native As2d runs, median per-forward publication "
                          "interval beside the target / idle per-forward time (R_LIVE)"}
    return {"v": round(med(per_tok_conc) / op_idle if per_tok_conc else 1.0, 4),
            "source": f"measured on host {f.date}, n={len(per_tok_conc)} passes, ratio of medians "
                      "(target running / idle)"}


def producer_part(f: Fit, setup: FitNames, has_conf: bool) -> dict[str, Any]:
    """``sources:``: the producer (idle per-forward service, coexistence, startup, publication) and the
    serial drafter (its draft forward inside the verifier's loop)."""
    per_tok = f.kind("producer_pass").filter(pl.col("tokens") >= MIN_PER_TOKEN).with_columns(
        (pl.col("ms") / pl.col("tokens")).alias("per_token"))
    idle = per_tok.filter(~pl.col("concurrent"))["per_token"].to_list()
    curve = publication_curve(f.raw)
    factor = _coexistence(f, med(idle), per_tok.filter(pl.col("concurrent"))["per_token"].to_list(), curve)
    first = f.kind("producer_first")
    if first.height:
        line = curve or PublicationCurve(med(idle) * factor["v"], 0.0, 0.0, 0)  # no line: the constant cost
        startup = {"v": round(line.lead_ms(first, prefilled=True), 4),
                   "source": f"fitted on host {f.date}, n={first.height} native As2d runs, median first publication "
                             "after the clock minus the coexisting operations before it (R_LIVE, R_OPS, R_PREFILL)"}
    else:
        startup = f.meas(f.kind("producer_startup")["ms"].to_list())
    sd = f.config("sd").filter(pl.col("work_forwards") > 0)
    forward = f.meas((1000 * sd["pre"] / sd["work_forwards"]).to_list(), "median SD draft time per forward")
    per_forward = f.meas(idle, "median producer time per drafter forward (R_OPS)")
    producer = {"kind": "autoregressive", "forward_ms": per_forward,
                "publication_ms": f.meas(f.kind("publication")["ms"].to_list()), "startup_ms": startup,
                "concurrent_factor": factor, "batch_tokens": {"v": setup.batch_tokens, "derived": "R_BATCH"},
                "confidence": has_conf, "prefilled": {"v": True, "derived": "R_PREFILL"},
                **({"growth": _growth(f, curve)} if curve is not None else {})}
    if setup.serial_source == setup.source:
        return {setup.source: {**producer, "forward_ms": forward}}
    serial = {"kind": "autoregressive", "forward_ms": forward,
              "publication_ms": {"v": 0.0, "derived": "R_SERIAL"}, "startup_ms": {"v": 0.0, "derived": "R_SERIAL"},
              "concurrent_factor": {"v": 1.0, "derived": "R_SERIAL"}, "batch_tokens": {"v": 1, "derived": "R_SERIAL"},
              "confidence": True}
    return {setup.source: producer, cast(str, setup.serial_source): serial}  # a serial drafter is named


# ------------------------------------------------------------------------------- ASP, anchor
def asp_part(f: Fit, sources: dict[str, Any], setup: FitNames) -> dict[str, Any]:
    """ASP's paired-branch and probability-row costs (non-negative least squares on draft time) and the
    batched KV refresh (R_REFRESH)."""
    f_ms = sources[cast(str, setup.serial_source)]["forward_ms"]["v"]
    idle, _ = sweep_tables(f)
    v1 = med(idle[1])
    refresh = {k: round(f_ms * med(v) / v1, 4) for k, v in idle.items()}
    asp = f.config("asp")
    paired = prob_row = 0.0
    if asp.height:
        rw = asp["work_refresh_width"].to_list()
        y = np.array([1000 * p - f_ms * n - (refresh.get(w, 0.0) if w else 0.0)
                      for p, n, w in zip(asp["pre"].to_list(), asp["work_forwards"].to_list(), rw, strict=True)])
        x = np.array([asp["work_paired_forwards"].to_list(), asp["work_prob_rows"].to_list()], dtype=float).T
        coef = np.linalg.lstsq(x, y, rcond=None)[0] if x.any() else np.zeros(2)
        paired, prob_row = round(max(0.0, float(coef[0])), 4), round(max(0.0, float(coef[1])), 4)
    fitted = f"fitted on host {f.date}, n={asp.height} ASP rounds, least squares"
    return {"paired_branch_ms": {"v": paired, "source": fitted}, "prob_row_ms": {"v": prob_row, "source": fitted},
            "kv_refresh_ms": {k: {"v": v, "derived": "R_REFRESH"} for k, v in refresh.items()}}


def anchor_part(f: Fit) -> dict[str, Any]:
    """The drift anchor: the median target-only round on the first calibration window, As²d's median time
    per committed token there, its producer's median interval per forward (R_OPS), and the idle calls at
    the probe widths on it at its first context (the runs and calls the drift probe repeats, ``drift.py``)."""
    to = f.target_only()
    if not to.height:
        return {}
    wid = to["window_id"][0]
    first = to.filter(pl.col("window_id") == wid)
    out: dict[str, Any] = {"anchor_ms": f.meas((first["ms"] / first["rounds"]).to_list(),
                                               "median target-only round on anchor_window (drift anchor)"),
                           "anchor_window": wid}
    a2 = f.kind("episode").filter((pl.col("scheme") == "as2d") & (pl.col("window_id") == wid))
    if a2.height:
        out["anchor_as2d_ms"] = f.meas((a2["ms"] / a2["tokens"]).to_list(),
                                       "median As2d time per committed token on anchor_window (As2d drift anchor)")
    pub = f.kind("producer_token").filter((pl.col("scheme") == "as2d") & (pl.col("window_id") == wid)
                                          & (pl.col("tokens") >= MIN_PER_TOKEN))
    if pub.height:
        out["anchor_producer_ms"] = f.meas(pub["ms"].to_list(), "median producer interval per forward "
                                                                "beside the target in As2d on anchor_window "
                                                                "(producer drift anchor)")
    ver = f.kind("verify").filter(~pl.col("concurrent") & (pl.col("offset") == 0) & (pl.col("window_id") == wid))
    widths = {k: ver.filter(pl.col("width") == k)["ms"].to_list() for k in PROBE_WIDTHS}
    widths = {k: v for k, v in widths.items() if v}
    if 1 in widths and len(widths) > 1:
        out["anchor_widths_ms"] = {k: f.meas(v, "median idle verify call on anchor_window at offset 0 (drift probe)")
                                   for k, v in widths.items()}
    return out


# ------------------------------------------------------------------------------- the profile
def fitted_parts(raw: pl.DataFrame, rounds: pl.DataFrame, names: FitNames, date: str,
                 has_conf: bool, stage_speed: bool = True) -> dict[str, Any]:
    """Every fitted field of the profile (drift anchor, kernel plan, step, loop, verifier, sources, ASP)
    from raw samples (in the order they were timed, the steadiness checkpoints among them) and episode
    rounds, brought to the drift anchor's speed first (R_STAGE; ``calibration.stage_factors`` says by how
    much; ``stage_speed=False``: as timed, to judge the rule on stored samples); medians throughout.
    ``date``: the calibration's day, named in every ``source``."""
    raw, rounds, factors = at_anchor_speed(raw, rounds) if stage_speed else (raw, rounds, ())
    f = Fit(raw.filter(pl.col("kind") != "checkpoint"), rounds, date)
    verifier, step = verifier_part(f)
    sources = producer_part(f, names, has_conf)
    plan = kernel_plan_part(f)
    return {
        **anchor_part(f),
        **({"kernel_plan": plan} if plan is not None else {}),
        "target_step_ms": step,
        **loop_part(f),
        "verifier": verifier,
        "sources": sources,
        "serial_drafter": names.serial_source,
        "asp": asp_part(f, sources, names),
        **({"calibration": {"stage_factors": stage_block(factors, date)}} if factors else {}),
    }


def fit_profile(raw: pl.DataFrame, rounds: pl.DataFrame, setup: HostSetup, date: str,
                has_conf: bool) -> dict[str, Any]:
    """The profile mapping (replay schema): this machine's header, the rules, and ``fitted_parts``."""
    return {
        "schema": SCHEMA, "name": "host", "device": f"this host ({cpu_model()})",
        "machine": machine_fingerprint(engine_label(setup.pair.config)),
        "description": (f"{setup.target.name} target on {setup.verifier}; producer {setup.source} "
                        f"(batch {setup.batch_tokens}) on {setup.producer_spec.placement}; serial drafter "
                        f"{setup.serial_source}. Measured by workbench.native.calibrate; ms per operation."),
        "rules": dict(RULES),
        **fitted_parts(raw, rounds, setup, date, has_conf),
    }


__all__ = ["IDLE_SCHEMES", "LIVE_MIN_CALLS", "RULES", "fit_profile", "kernel_costs", "live_widths",
           "with_positions", "FitNames", "fitted_parts"]
