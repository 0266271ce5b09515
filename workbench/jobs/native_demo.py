"""Native host runs inside the demo: the real clock on the test windows, methods interleaved.

Every window's speculative outputs are audited against its target-only output from the same
run; a mismatch is counted and reported, never hidden.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import polars as pl
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from workbench import metrics as M
from workbench.decoding import scheme_spec
from workbench.native.agreement import replay_native_run
from workbench.native.driver import NativeHost, NativeResult
from workbench.native.producer import Placement, ProducerSpec
from workbench.replay.profile import DeviceProfile
from workbench.replay.selection import split_windows
from workbench.replay.trajectory import Window

from .common import method_cfg, profile_source
from .demo_traces import Backends, demo_corpus

STAGE_COLS = ["resource", "stage", "start", "end", "round"]


@dataclass
class NativeRuns:
    tables: dict[str, pl.DataFrame]
    metrics: dict[str, float]
    summary: pl.DataFrame
    timeline: tuple[pl.DataFrame, pl.DataFrame] | None


def placements(n_cpu: int | None = None) -> tuple[Placement, Placement]:
    """Verifier on CPU 0 and producer on CPU 1 when there are two; else the OS decides."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cpus) >= 2:
        return Placement(1, (cpus[0],)), Placement(1, (cpus[1],))
    return Placement(1), Placement(1)


def _params(cfg: DictConfig, name: str, budget: int) -> dict[str, Any]:
    m = method_cfg(cfg, name)
    allowed = scheme_spec(name).defaults  # the catalog rejects a setting the scheme does not have
    return {k: v for k, v in {"width": m.get("width"), "threshold": m.get("threshold"), "cap": m.get("cap"),
                              "span": m.get("span"), "budget": budget}.items() if v is not None and k in allowed}


def agreement(results: list[tuple[int, NativeResult]], host: DeviceProfile, budget: int, max_output: int,
              eos_id: int, vocab_size: int, producer: str) -> pl.DataFrame:
    """Replay each native As²d run's own trajectory under the frozen host profile (D.3)."""
    src = profile_source(host, "producer", {"producer": [producer]})
    ref = {(rep, r.window_id): r.output for rep, r in results if r.scheme == "target_only"}
    rows = []
    for rep, r in results:
        if r.scheme != "as2d" or src is None:
            continue
        _, rp = replay_native_run(r, ref[(rep, r.window_id)], host, source=src, budget=budget, eos_id=eos_id,
                                  vocab_size=vocab_size, max_output=max_output)
        nat = len(r.output) / r.time
        rows.append({"window_id": r.window_id, "repeat": rep, "tokens": len(r.output), "tps_native": nat,
                     "tps_replay": rp.tps, "signed_error_pct": 100 * (rp.tps / nat - 1)})
    return pl.DataFrame(rows)


def native_runs(cfg: DictConfig, backends: Backends, windows: list[Window],
                host_profile: DeviceProfile | None = None) -> NativeRuns:
    from workbench.models.whisper import WhisperTarget, whisper_drafter

    ncfg = OmegaConf.to_container(cfg.native, resolve=True)
    names = list(ncfg.get("methods") or ["target_only", "as2d"])
    if "target_only" not in names:
        names.insert(0, "target_only")  # the exactness reference of every window
    n_dev = max(1, round(len(windows) * cfg.dataset.get("dev_fraction", 0.25)))
    _, test = split_windows(windows, n_dev, seed=int(cfg.get("seed", 0)))
    chosen = test.windows[: ncfg.get("max_windows") or len(test.windows)]
    corpus = demo_corpus(cfg)
    clips = {c.window_id: c for c in corpus.clips}
    verifier, producer = placements()
    spec = ProducerSpec(drafter=backends.producer_cfg, target_tokenizer=str(backends.target_dir / "tokenizer.json"),
                        target_eos=backends.eos_id, batch_tokens=int(backends.producer_cfg.get("batch_tokens", 8)),
                        placement=producer)
    budget = int(cfg.model.budget)
    results: list[tuple[int, NativeResult]] = []
    with NativeHost(spec, verifier=verifier) as host:
        todo = [(rep, w) for rep in range(int(ncfg.get("repeats", 1))) for w in chosen]
        for rep, w in tqdm(todo, desc="native host", unit="window"):
            audio = corpus.load_audio(clips[w.window_id])
            order = names if rep % 2 == 0 else names[::-1]  # alternate order across repeats (D.3)
            for name in order:
                serial = name in ("sd", "asp", "as2d_wo_td")
                drafter = whisper_drafter(backends.serial, audio) if serial else None
                target = WhisperTarget(backends.target, audio)
                res = host.run(w.window_id, name, target, audio=audio, max_output=backends.max_output,
                               drafter=drafter, params=_params(cfg, name, budget) if name != "target_only" else None)
                results.append((rep, res))
    runs = _frames(results, host.placement)
    if host_profile is not None:
        agr = agreement(results, host_profile, budget, backends.max_output, backends.eos_id, backends.vocab_size,
                        str(backends.producer_cfg.get("name")))
        if agr.height:
            runs.tables["agreement"] = agr
            runs.metrics["agreement.mae_pct"] = float(agr["signed_error_pct"].abs().mean())
            t_replay = (agr["tokens"] / agr["tps_replay"]).sum()
            t_native = (agr["tokens"] / agr["tps_native"]).sum()
            runs.metrics["agreement.pooled_error_pct"] = 100 * (t_native / t_replay - 1)  # pooled TPS ratio
    return runs


def _frames(results: list[tuple[int, NativeResult]], placement: dict) -> NativeRuns:
    ref = {(rep, r.window_id): r.output for rep, r in results if r.scheme == "target_only"}
    win_rows, rounds, stages = [], [], []
    for rep, r in results:
        matched = r.output == ref[(rep, r.window_id)]
        keys = {"device": "host", "method": r.scheme, "config": r.scheme, "window_id": r.window_id, "repeat": rep}
        win_rows.append({**keys, "tokens": len(r.output), "time": r.time, "matched": matched,
                         "cleanup": r.cleanup, "capped": r.capped})
        rounds.append(pl.DataFrame([x.as_row() for x in r.records]).with_columns(
            *(pl.lit(v).alias(k) for k, v in keys.items())))
        stages.append(pl.DataFrame(list(r.stages), schema=STAGE_COLS, orient="row").with_columns(
            pl.lit(r.time).alias("T"), *(pl.lit(v).alias(k) for k, v in keys.items())))
    wf = M.tps_per_window(pl.DataFrame(win_rows))
    rf = pl.concat(rounds, how="diagonal_relaxed")
    sf = pl.concat(stages, how="diagonal_relaxed")
    rows, metrics = [], {}
    base = M.tps_pooled(wf.filter(pl.col("method") == "target_only"))
    for (method,), g in wf.group_by(["method"], maintain_order=True):
        r = rf.filter(pl.col("method") == method)
        ov = M.overlap_table(sf.filter(pl.col("method") == method), keys=("window_id", "repeat"))
        tps = M.tps_pooled(g)
        per = g.join(wf.filter(pl.col("method") == "target_only").select("window_id", "repeat",
                                                                           pl.col("tps").alias("tps_t")),
                     on=["window_id", "repeat"])
        row = {"device": "host", "method": method, "clock": "native", "tps": tps, "speedup": tps / base,
               "acceptance": M.acceptance(r), "coverage": M.coverage(r, int(g["tokens"].sum())),
               "readiness": M.readiness(r), "k_gt1_share": M.multi_token_share(r),
               "slowdown_share": float((per["tps"] < per["tps_t"]).mean()) if method != "target_only" else None,
               "matched": float(g["matched"].mean()),
               **{t: float(ov[t].sum()) for t in ("D", "V", "O", "H", "T")}}
        row["bound"] = float((ov.select(pl.max_horizontal("D", "V") + pl.col("H"))).sum().item())
        rows.append(row)
        for k, v in row.items():
            if isinstance(v, float | int) and not isinstance(v, bool):
                metrics[f"native.{method}.{k}"] = float(v)
    metrics["native.mismatches"] = float((~wf["matched"]).sum())
    as2d = [r for _, r in results if r.scheme == "as2d"]
    tl = None
    if as2d:
        r = as2d[0]
        tl = (pl.DataFrame(list(r.stages), schema=STAGE_COLS, orient="row"),
              pl.DataFrame([x.as_row() for x in r.records]))
    tables = {"native_windows": wf, "native_rounds": rf, "native_stages": sf,
              "native_placement": pl.DataFrame([{"role": k, **{kk: str(vv) for kk, vv in v.items()}}
                                                for k, v in placement.items()])}
    return NativeRuns(tables, metrics, pl.DataFrame(rows), tl)
