"""The MNN benchmark: ``python -m workbench.native.bench --engine mnn`` (or ``python -m workbench.models.mnn.bench``).

One interleaved run on the demo windows through the native driver (producer in its own process):

* MNN target-only (the exactness reference of every MNN run: ``matched`` is judged against it),
* torch target-only (its ``matched`` says whether torch greedy equals MNN greedy on that window),
* MNN As²d with the pair's producer on MNN, MNN serial SD and ASP;

then the per-width forward costs of both engines (step K=1 and verify K) and F.6: per window,
whether MNN greedy equals torch greedy and where they first differ. Timings on a loaded machine
are noisy; the command prints the load average beside them.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

MNN_REF = "target_only@1t"  # the bench's reference name; here it is MNN's target-only (renamed on print)


def mnn_methods(model_cfg: dict[str, Any], profile: Any = None) -> tuple[list[Any], Any, Any]:
    """(methods, MNN setup, torch setup) for ``run_bench``.

    MNN fixes a module's threads when it loads, so 2-thread target-only is a second MNN target loaded
    with ``mnn.threads=2`` (the best target-only on two cores, as torch's ``target_only@2t``). With this
    machine's MNN ``profile`` also as2d_online (every calibrated width) and, on two or more CPUs, the
    same with the producer's core joining once the producer has finished (``+cores``: the target
    switches to a decoder loaded with that many threads, ``MnnWhisperTarget.use_threads``)."""
    from workbench.models.pair import load_pair
    from workbench.native.bench import Method, online_methods, profile_costs
    from workbench.native.episodes import host_setup
    from workbench.native.producer import ALLOWED_CPUS

    from .runtime import check_engine

    cfg = {**model_cfg, "engine": "mnn"}
    _, settings = check_engine(cfg)  # one line for a family MNN cannot run, before any model loads
    mnn = host_setup(load_pair(cfg, engine="mnn"))
    torch_setup = host_setup(load_pair({**model_cfg, "engine": "torch"}, engine="torch"), verifier=mnn.verifier)
    torch_setup = replace(torch_setup, producer=None)  # target-only needs no producer process
    methods = [Method(MNN_REF, "native", mnn, 1, "target_only")]
    cores = max(1, len(ALLOWED_CPUS))
    if cores > 1:
        wide = {**cfg, "mnn": {**settings.as_dict(), "threads": cores}}
        wide_setup = replace(host_setup(load_pair(wide, engine="mnn")), producer=None)
        methods.append(Method(f"target_only@{cores}t", "native", wide_setup, cores, "target_only"))
    methods += [Method("torch/target_only", "native", torch_setup, 1, "target_only"),
                Method(f"mnn/as2d/{mnn.source}", "native", mnn, 1, "as2d")]
    if profile is not None:
        if cores > 1:
            mnn.pair.target.decoder_with(cores)  # +cores' decoder, loaded now, not inside a timed window
        methods += online_methods(mnn, profile_costs(profile), prefix="mnn/")
    if mnn.serial_source is not None:
        methods += [Method("mnn/sd", "native", mnn, 1, "sd"), Method("mnn/asp", "native", mnn, 1, "asp")]
    return methods, mnn, torch_setup


def engine_costs(mnn: Any, torch_setup: Any, audio: Any, reps: int = 10, widths: Sequence[int] = (1, 4, 8),
                 prefix_tokens: int = 24) -> pl.DataFrame:
    """Per-width forward ms of target and producer on both engines (``compare.side_by_side`` rows).

    Every forward sits on the prompt plus ``prefix_tokens`` real tokens (the MNN model's own greedy
    output on ``audio``), a typical KV length mid-window."""
    import itertools

    from workbench.models.whisper import WhisperDecoderState

    from .compare import cost_table, side_by_side
    from .whisper import mnn_producer

    tp, mp = torch_setup.pair, mnn.pair
    sessions, prefix = {}, {}
    for role, m_b, t_b in (("target", mp.target, tp.target), ("producer", mp.producer, tp.producer)):
        own = [p.token for p in itertools.islice(mnn_producer(m_b, audio), prefix_tokens)]
        prefix[role] = list(m_b.protocol.prompt_ids) + own[:-1]
        encoded = m_b.decoder_state(m_b.features(audio))
        feats = t_b.features(audio)
        sessions[("mnn", role)] = encoded.fork
        sessions[("torch", role)] = lambda b=t_b, f=feats: WhisperDecoderState(b, f)
    costs = cost_table(sessions, prefix, widths, reps)
    names = {"target": mp.config["target"]["name"], "producer": mp.producer_name}
    return side_by_side(costs).with_columns(pl.col("model").replace(names).alias("model"))


def f6_agreement(mnn: Any, torch_setup: Any, windows: Sequence[Any]) -> pl.DataFrame:
    """F.6 per window: torch greedy against MNN greedy (both target-only, off any clock)."""
    from workbench.decoding.driver import decode
    from workbench.decoding.schemes.target_only import TargetOnly

    from .compare import greedy_agreement

    outs = {}
    for w in windows:
        pair = []
        for setup in (torch_setup, mnn):
            t = setup.pair.new_target(w.audio)
            pair.append(list(decode(TargetOnly(setup.max_output, t.eos_id), t).output))
        outs[w.window_id] = (pair[0], pair[1])
    return greedy_agreement(outs)


def run(model: str = "whisper_base", repeats: int = 2, n_windows: int | None = None, max_seconds: float = 25.0,
        out_dir: str | Path = "outputs/native/bench_mnn", cost_reps: int = 10, online: bool = True,
        profile: str | None = None) -> dict[str, pl.DataFrame]:
    """``online``: also as2d_online (and ``+cores``), priced by ``profile`` or by this machine's MNN
    host profile, calibrated once if there is none yet (``native.fingerprint.host_profile``)."""
    from workbench.models.registry import load_model_config
    from workbench.native.bench import run_bench
    from workbench.native.windows import demo_windows
    from workbench.replay.profile import load_profile

    _, evals = demo_windows(max_seconds)
    evals = evals[:n_windows]
    cfg = {**load_model_config(model), "engine": "mnn"}
    prof = None
    if online:
        from workbench.native.fingerprint import host_profile

        prof = load_profile(profile) if profile else host_profile(cfg)
        print(f"MNN costs from {prof.file}")
    methods, mnn, torch_setup = mnn_methods(cfg, prof)
    frames = run_bench(evals, methods, repeats, out_dir=out_dir)
    # summarize judges against the best method named target_only*, here MNN's: renamed once judged
    rename = {m.name: f"mnn/{m.name}" for m in methods if m.name.startswith("target_only")}
    frames["summary"] = frames["summary"].with_columns(pl.col("method").replace(rename))
    frames["costs"] = engine_costs(mnn, torch_setup, evals[0].audio, cost_reps)
    frames["f6"] = f6_agreement(mnn, torch_setup, evals)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("costs", "f6"):
        frames[name].write_parquet(out / f"bench_{name}.parquet")
    return frames


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="MNN vs torch on the demo windows.")
    ap.add_argument("--model", default="whisper_base")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--windows", type=int, default=None)
    ap.add_argument("--max-seconds", type=float, default=25.0)
    ap.add_argument("--cost-reps", type=int, default=10)
    ap.add_argument("--out-dir", default="outputs/native/bench_mnn")
    ap.add_argument("--no-online", action="store_true", help="skip as2d_online (no MNN host profile needed)")
    ap.add_argument("--profile", default=None, help="MNN host profile (default: this machine's, calibrated once)")
    args = ap.parse_args(argv)
    from workbench.native.bench import goal_lines

    frames = run(args.model, args.repeats, args.windows, args.max_seconds, args.out_dir, args.cost_reps,
                 not args.no_online, args.profile)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=250, float_precision=3):
        print("As²d on MNN (matched: equal to MNN target-only; torch/target_only: equal to MNN greedy; "
              "ratio_target_only and slower_share: against the best MNN target-only)")
        print(frames["summary"].drop("ratio_hf"))
        print("Forward cost per width (ms, median; step = width 1, verify = width K)")
        print(frames["costs"])
        print("F.6: MNN greedy vs torch greedy per window")
        print(frames["f6"])
    print(f"load: {os.getloadavg()} (noisy when other jobs share the CPU)")
    print("\n".join(goal_lines(frames["summary"], prefix="mnn/as2d", hf=False)))


if __name__ == "__main__":
    main()
