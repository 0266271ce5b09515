"""Job ``streaming``: sustained native streaming on this host (D.6.2, Fig. 9, Table 16).

The run's corpus (the demo corpus offline) is looped into a ``duration_s`` stream that arrives in
real time as 4 s blocks; each block is processed natively (encode, prefill, decode with the
configured scheme). Per-block lag and queue wait, active/resource RTF, p95 lag, trailing decode TPS
and prefill time, and the host temperature where readable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig, OmegaConf

from workbench.decoding import SCHEMES, scheme_spec

from .base import ConfigError, JobResult
from .config import budget, check_models
from .windows import check_real_audio

# the config groups this job reads; an override of any other group is refused (workbench.run)
READS = ("model", "dataset")


def _opts(cfg: DictConfig) -> dict[str, Any]:
    o = OmegaConf.to_container(cfg.get("streaming") or {}, resolve=True)
    o["duration_s"] = cfg.get("duration_s")
    for key in ("duration_s", "block_s", "reset_s", "speed"):
        v = o.get(key)
        if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
            where = key if key == "duration_s" else f"streaming.{key}"
            raise ConfigError(where, f"must be a positive number, got {v!r}")
    if o["reset_s"] < o["block_s"]:
        raise ConfigError("streaming.reset_s", f"must be >= streaming.block_s ({o['block_s']} s)")
    if o["duration_s"] < o["block_s"]:
        raise ConfigError("duration_s", f"shorter than one block ({o['block_s']} s)")
    if o.get("expiry", "arrival") not in ("arrival", "consumption"):
        raise ConfigError("streaming.expiry", f"choose arrival or consumption (D.6.2), got {o.get('expiry')!r}")
    if o.get("method") not in SCHEMES or scheme_spec(o["method"]).needs_costs:
        raise ConfigError("streaming.method", f"choose one of {[s for s in SCHEMES if not scheme_spec(s).needs_costs]}"
                          f", got {o.get('method')!r}")
    return o


def validate(cfg: DictConfig) -> None:
    _opts(cfg)
    budget(cfg)
    check_real_audio(cfg)
    check_models(cfg)


def run(cfg: DictConfig, out: Path) -> JobResult:
    from workbench.native.driver import NativeHost
    from workbench.native.episodes import host_setup
    from workbench.native.ondemand import cpu_note, request_trace
    from workbench.native.streaming import host_processor, run_stream, summarize, temperature_reader

    from .config import kernel_plan_profile
    from .demo_traces import clip_audio, demo_corpus, load_model_pair

    o = _opts(cfg)
    corpus = demo_corpus(cfg)
    stream = request_trace([(c.window_id, clip_audio(c, cfg.model)) for c in corpus.clips], float(o["duration_s"]),
                           checkpoints=[float(o["duration_s"])])
    setup = host_setup(load_model_pair(cfg))
    setup.use_profile(kernel_plan_profile(cfg))  # the fastest kernel per width this machine measured
    temp = temperature_reader()
    if temp is None:
        print("temperature unavailable on this machine (no readable thermal zone or hwmon sensor)")
    with NativeHost(setup.producer, setup.verifier) as host:
        proc = host_processor(setup, host, o["method"])
        proc(*_warm_block(stream.audio))  # warm-up before the stream (loading and warm-up precede it)
        frame = run_stream(stream.audio, proc, block_s=float(o["block_s"]), reset_s=float(o["reset_s"]),
                           deadline_s=o.get("deadline_s"), expiry=str(o.get("expiry", "arrival")),
                           speed=float(o["speed"]), temperature=temp,
                           progress=True)
    s = summarize(frame)
    summary = pl.DataFrame([{"method": o["method"], **s}])
    return JobResult({f"streaming.{k}": v for k, v in s.items()}, {"blocks": frame.drop("output"),
                     "streaming_summary": summary}, {"fig9_streaming": fig9_chart(frame)}, summary,
                     {"load": cpu_note(), "duration_s": str(o["duration_s"]), "method": o["method"],
                      "temperature": "host" if temp is not None else "unavailable"})


def _warm_block(audio: Any) -> tuple[Any, Any, bool]:
    from workbench.native.streaming import Block
    from workbench.native.windows import SAMPLE_RATE

    return Block(-1, 0.0, 4.0, 0.0), audio[: 4 * SAMPLE_RATE], True


def fig9_chart(frame: pl.DataFrame) -> Any:
    """Fig. 9: per-block completion lag and queue wait, trailing RTF, by input-arrival time."""
    import altair as alt

    data = frame.select("arrival", "lag_s", "queue_wait_s", "trailing_rtf", "trailing_decode_tps",
                        "trailing_prefill_s").unpivot(index="arrival", variable_name="metric").to_pandas()
    return alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("arrival:Q", title="input arrival (s)"), y=alt.Y("value:Q", title=None),
        row=alt.Row("metric:N", title=None)).resolve_scale(y="independent").properties(width=420, height=90)
