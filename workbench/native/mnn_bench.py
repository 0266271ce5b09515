"""The MNN method set of ``python -m workbench.native.bench --engine mnn``.

One interleaved run on the bench windows through the native driver (producer in its own process):

* MNN target-only (the exactness reference of every MNN run: ``matched`` is judged against it),
* torch target-only, ``target_only@1t/torch`` (its ``matched`` says whether torch greedy equals MNN
  greedy on that window; it takes part in the best target-only like every other variant), by this
  machine's kernel plan and on each forced linear kernel (``target_only@2t/torch/packed``): the plan
  was fitted on the verifier's one thread, and at two threads another kernel can be the faster one,
* MNN As²d with the pair's producer on MNN, MNN serial SD and ASP;

then the per-width forward costs of both engines (step K=1 and verify K) and F.6: per window,
whether MNN greedy equals torch greedy and where they first differ. Timings on a loaded machine
are noisy; the command prints the load average beside them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import polars as pl

from workbench.decoding.costs import RoundCosts

from .driver import Fallback
from .methods import Method, online_methods, producer_on_mnn, second_producer

MNN_REF = "target_only@1t"  # the bench's reference name; here it is MNN's target-only (renamed on print)


def mnn_target_only(model_cfg: dict[str, Any], suffix: str = "/mnn") -> list[Any]:
    """MNN target-only on one thread and on every allowed CPU (MNN fixes threads when it loads, so the
    wider one is a second MNN target): the MNN entries of the bench's best target-only."""
    from workbench.models.mnn.runtime import check_engine
    from workbench.models.pair import load_pair
    from workbench.native.episodes import host_setup
    from workbench.native.producer import ALLOWED_CPUS

    cfg = {**model_cfg, "engine": "mnn"}
    _, settings = check_engine(cfg)
    one = replace(host_setup(load_pair(cfg, engine="mnn")), producer=None)
    methods = [Method(f"target_only@1t{suffix}", "native", one, 1, "target_only")]
    cores = max(1, len(ALLOWED_CPUS))
    if cores > 1:
        wide = {**cfg, "mnn": {**settings.as_dict(), "threads": cores}}
        wide_setup = replace(host_setup(load_pair(wide, engine="mnn"), verifier=one.verifier), producer=None)
        methods.append(Method(f"target_only@{cores}t{suffix}", "native", wide_setup, cores, "target_only"))
    return methods


def mnn_methods(model_cfg: dict[str, Any], costs: RoundCosts | None = None, *, torch_profile: Any = None,
                fallbacks: Sequence[Fallback] = (), kernels: Sequence[str] = (),
                same_vocab_cfg: dict[str, Any] | None = None) -> tuple[list[Any], Any, Any]:
    """(methods, MNN setup, torch setup) for ``run_bench``.

    MNN fixes a module's threads when it loads, so 2-thread target-only is a second MNN target loaded
    with ``mnn.threads=2`` (the best target-only on two cores, as torch's ``target_only@2t``). With this
    machine's MNN ``profile`` also as2d_online (every calibrated width) and, on two or more CPUs, the
    same with the producer's core joining once the producer has finished (``+cores``: the target
    switches to a decoder loaded with that many threads, ``MnnWhisperTarget.use_threads``).
    ``costs``: this machine's MNN per-width round costs (``bench.profile_costs``), None: no online;
    ``fallbacks``: also ``+cores`` with each of these fallback rules (``driver.Fallback``), as on torch.
    ``torch_profile``: this machine's torch host profile; torch target-only then runs by its kernel
    plan (plain, packed or padded per width), so the best target-only is the best over engines *and*
    kernels, not MNN against torch's plain kernels; ``kernels``: torch target-only also with every linear
    on each of these (``models.packed_linear``), at one thread and at every allowed CPU.
    ``same_vocab_cfg``: a second producer's ``conf/model`` (the target's vocabulary, e.g. Whisper-base
    int8), also on MNN, as fixed As²d and as2d_online: a producer choice made on dev like the others."""
    from workbench.models.mnn.runtime import check_engine
    from workbench.models.pair import load_pair
    from workbench.native.episodes import host_setup
    from workbench.native.producer import ALLOWED_CPUS

    cfg = {**model_cfg, "engine": "mnn"}
    _, settings = check_engine(cfg)  # one line for a family MNN cannot run, before any model loads
    mnn = host_setup(load_pair(cfg, engine="mnn"))
    torch_setup = host_setup(load_pair({**model_cfg, "engine": "torch"}, engine="torch"), verifier=mnn.verifier)
    torch_setup = replace(torch_setup, producer=None)  # target-only needs no producer process
    torch_setup.use_profile(torch_profile)
    methods = [Method(MNN_REF, "native", mnn, 1, "target_only")]
    cores = max(1, len(ALLOWED_CPUS))
    if cores > 1:
        wide = {**cfg, "mnn": {**settings.as_dict(), "threads": cores}}
        wide_setup = replace(host_setup(load_pair(wide, engine="mnn")), producer=None)
        methods.append(Method(f"target_only@{cores}t", "native", wide_setup, cores, "target_only"))
    methods += [Method("target_only@1t/torch", "native", torch_setup, 1, "target_only"),
                Method(f"target_only@{cores}t/torch", "native", torch_setup, cores, "target_only"),
                *torch_kernel_variants(model_cfg, mnn.verifier, kernels, cores),
                Method(f"mnn/as2d/{mnn.source}", "native", mnn, 1, "as2d")]
    if costs is not None:
        if cores > 1:
            mnn.pair.target.decoder_with(cores)  # +cores' decoder, loaded now, not inside a timed window
        methods += online_methods(mnn, costs, prefix="mnn/", fallbacks=fallbacks)
    if same_vocab_cfg is not None:
        second = producer_on_mnn(second_producer(mnn, same_vocab_cfg["drafter"]), cfg.get("mnn") or {})
        if second.source != mnn.source:
            methods.append(Method(f"mnn/as2d/{second.source}", "native", second, 1, "as2d"))
            if costs is not None:
                methods += online_methods(second, costs, prefix="mnn/")
    if mnn.serial_source is not None:
        methods += [Method("mnn/sd", "native", mnn, 1, "sd"), Method("mnn/asp", "native", mnn, 1, "asp")]
    return methods, mnn, torch_setup


def torch_kernel_variants(model_cfg: dict[str, Any], verifier: Any, kernels: Sequence[str],
                          cores: int) -> list[Any]:
    """Torch target-only with every linear forced onto each of ``kernels``, on one thread and on ``cores``
    (``target_only@Nt/torch/<kernel>``): entries of the best target-only over engines x kernels x threads."""
    from workbench.models.pair import load_pair
    from workbench.native.episodes import host_setup

    methods = []
    for k in dict.fromkeys(kernels):
        cfg = {**model_cfg, "engine": "torch", "target": {**model_cfg["target"], "kernels": k}}
        alone = replace(host_setup(load_pair(cfg, engine="torch"), verifier=verifier), producer=None)
        methods += [Method(f"target_only@{n}t/torch/{k}", "native", alone, n, "target_only")
                    for n in dict.fromkeys((1, cores))]
    return methods


def engine_costs(mnn: Any, torch_setup: Any, audio: Any, reps: int = 10, widths: Sequence[int] = (1, 4, 8),
                 prefix_tokens: int = 24) -> pl.DataFrame:
    """Per-width forward ms of target and producer on both engines (``compare.side_by_side`` rows).

    Every forward sits on the prompt plus ``prefix_tokens`` real tokens (the MNN model's own greedy
    output on ``audio``), a typical KV length mid-window."""
    import itertools

    from workbench.models.mnn.compare import cost_table, side_by_side
    from workbench.models.mnn.whisper import mnn_producer
    from workbench.models.whisper import WhisperDecoderState

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
    from workbench.models.mnn.compare import greedy_agreement

    outs = {}
    for w in windows:
        pair = []
        for setup in (torch_setup, mnn):
            t = setup.pair.new_target(w.audio)
            pair.append(list(decode(TargetOnly(setup.max_output, t.eos_id), t).output))
        outs[w.window_id] = (pair[0], pair[1])
    return greedy_agreement(outs)


__all__ = ["MNN_REF", "engine_costs", "f6_agreement", "mnn_methods", "mnn_target_only", "torch_kernel_variants"]
