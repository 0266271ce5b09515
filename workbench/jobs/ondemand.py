"""Job ``ondemand``: native on-demand requests (Section 5.4, D.6.1, Fig. 7) on this host.

A 10-minute request trace from the run's corpus (the demo corpus offline), 19 checkpoints, one
formal request per checkpoint and method after a warm-up; request latency L_u (request to EOS,
with residual prefill), TTFT, preparation time, decode TPS, Q_alpha, peak RSS vs the memory
budget, exact token match
and word-edit agreement against target-only. Host energy per request where RAPL is readable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig, OmegaConf

from workbench.decoding import SCHEMES

from .base import ConfigError, JobResult
from .config import budget, check_models
from .windows import check_real_audio

# the config groups this job reads; an override of any other group is refused (workbench.run)
READS = ("model", "dataset")


def _opts(cfg: DictConfig) -> dict[str, Any]:
    o = OmegaConf.to_container(cfg.get("ondemand") or {}, resolve=True)
    for key in ("duration_s", "first_s", "step_s", "window_s"):
        v = o.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
            raise ConfigError(f"ondemand.{key}", f"must be a positive number of seconds, got {v!r}")
    if o["first_s"] > o["duration_s"]:
        raise ConfigError("ondemand.first_s", f"{o['first_s']} s lies after the trace ({o['duration_s']} s)")
    if not isinstance(o.get("warmup"), int) or o["warmup"] < 0:
        raise ConfigError("ondemand.warmup", f"need an integer >= 0, got {o.get('warmup')!r}")
    bad = [m for m in o.get("methods") or [] if m not in SCHEMES]
    if bad or not o.get("methods"):
        raise ConfigError("ondemand.methods", f"unknown {bad or 'empty list'}; choose from {list(SCHEMES)}")
    return o


def validate(cfg: DictConfig) -> None:
    _opts(cfg)
    budget(cfg)
    check_real_audio(cfg)
    check_models(cfg)


def checkpoints(o: dict[str, Any]) -> list[float]:
    n = int((o["duration_s"] - o["first_s"]) // o["step_s"]) + 1
    out = [o["first_s"] + i * o["step_s"] for i in range(n)]
    return out[: o["max_checkpoints"]] if o.get("max_checkpoints") else out


def run(cfg: DictConfig, out: Path) -> JobResult:
    from workbench.energy import UNAVAILABLE, host_meter
    from workbench.native.episodes import host_setup
    from workbench.native.ondemand import cpu_note, request_trace, run_ondemand, tail_latency

    from .config import kernel_plan_profile
    from .demo_traces import clip_audio, demo_corpus, load_model_pair

    o = _opts(cfg)
    corpus = demo_corpus(cfg)
    trace = request_trace([(c.window_id, clip_audio(c, cfg.model)) for c in corpus.clips], float(o["duration_s"]),
                          checkpoints(o))
    pair = load_model_pair(cfg)
    setup = host_setup(pair)
    setup.use_profile(kernel_plan_profile(cfg))  # the fastest kernel per width this machine measured
    meter = host_meter()
    if meter is None:
        print(UNAVAILABLE)
    settings = [True, False] if o.get("unprepared") else [True]
    frame = pl.concat([run_ondemand(setup, trace, list(o["methods"]), window_s=float(o["window_s"]),
                                    warmup=int(o["warmup"]), memory_budget_mb=o.get("memory_budget_mb"),
                                    decode=pair.target_codec.decode, meter=meter, progress=True, prepare=prepare)
                       for prepare in settings], how="diagonal_relaxed")
    summary = tail_latency(frame)
    metrics: dict[str, float] = {}
    for row in summary.iter_rows(named=True):
        name = row["method"] if row["prepared"] else f"{row['method']}.unprepared"
        for k, v in row.items():
            if k not in ("method", "prepared") and isinstance(v, int | float) and not isinstance(v, bool):
                metrics[f"ondemand.{name}.{k}"] = float(v)
    metrics.update(latency_ratios(summary))
    return JobResult(metrics, {"requests": frame.drop("output"), "ondemand_summary": summary},
                     {"fig7_ondemand": fig7_chart(frame)}, summary,
                     {"requests": str(frame.height), "load": cpu_note(), "engine": str(cfg.model.engine),
                      "energy": "rapl" if meter is not None else "unavailable"})


def latency_ratios(summary: pl.DataFrame) -> dict[str, float]:
    """Each method's p50 request latency over target-only's, with prepared audio (Section 5.4)."""
    rows = {r["method"]: r for r in summary.filter(pl.col("prepared")).iter_rows(named=True)}
    base = rows.get("target_only")
    if base is None or not base["latency_p50"]:
        return {}
    return {f"ondemand.{m}.latency_p50_ratio": r["latency_p50"] / base["latency_p50"]
            for m, r in rows.items() if m != "target_only"}


def fig7_chart(frame: pl.DataFrame) -> Any:
    """Fig. 7: request-to-EOS TPS per checkpoint, one line per method."""
    import altair as alt

    data = frame.filter(pl.col("prepared")).select("checkpoint_s", "method", "request_tps", "latency_s").to_pandas()
    return alt.Chart(data, title="Fig. 7: on-demand requests, audio prepared before each request").mark_line(
        point=True).encode(
        x=alt.X("checkpoint_s:Q", title="request position (s)"),
        y=alt.Y("request_tps:Q", title="request-to-EOS TPS"), color=alt.Color("method:N"),
        tooltip=["method", "checkpoint_s", "request_tps", "latency_s"]).properties(width=420, height=240)
