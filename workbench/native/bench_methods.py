"""The host benchmark's method set (``native.bench``): target-only on every thread count, kernel and
engine this machine offers, HF assisted generation, SD, lookahead, ASP, and As²d with each producer and
each dev-chosen variant (budgets, batches, the online rule, ``+cores``, fallbacks, kernels, MNN).
Method names are the bench's table rows; ``methods.Method`` is one of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from workbench.decoding.costs import RoundCosts, round_costs
from workbench.replay.profile import DeviceProfile, MissingWidthError

from .chunks import CHUNK_SOURCES, chunk_setup
from .driver import Fallback
from .episodes import HostSetup, host_setup, scheme_settings
from .methods import Method, online_methods, producer_on_mnn, second_producer


def profile_costs(profile: DeviceProfile, drafter_forward: float = 0.0) -> RoundCosts:
    """This machine's cost of one As²d round at each width (ms): the concurrent verify (the producer
    runs beside it) plus the round's alignment and queue work -- what as2d_online weighs (as replay) --
    and the same round once the producer has finished (``RoundCosts.idle``)."""
    running, idle = {}, {}
    for k in profile.verifier.widths():
        try:
            running[k] = profile.verify_ms(k, True)
        except MissingWidthError:
            continue
        idle[k] = profile.verify_ms(k, False)
    return round_costs(running, idle, profile.target_step_ms, (profile.alignment_ms + profile.queue_ms,),
                       drafter_forward)


def default_methods(model_cfg: dict[str, Any], same_vocab_cfg: dict[str, Any] | None,
                    profile: DeviceProfile | None = None, batches: Sequence[int] = (),
                    kernels: Sequence[str] = (), hf: bool = True, budgets: Sequence[int] = (),
                    as2d_kernels: Sequence[str] | None = None, fallbacks: Sequence[Fallback] = (),
                    mnn_producer: bool = False, guess: bool = False) -> list[Method]:
    """target-only (1 and 2 threads), HF assisted (same-vocab int8 base; cross-tokenizer tiny.en),
    SD, prefix lookahead and ASP with the serial drafter, As²d with each producer; with this machine's ``profile``
    also as2d_online (chain length per round from the machine's per-width costs, up to ``online_cap``)
    and, on two or more CPUs, the same with the producer's core joining the verifier once the producer
    has finished (``+cores``, ``driver.JoiningCores``), and that with each of ``fallbacks``
    (``+cores+fallback:AFTER:BELOW``, ``driver.Fallback``), and with ``guess`` each of those with the
    substitution guess (``+guess``); with ``mnn_producer``, fixed As²d and those
    again with the producer on MNN (``@mnn``, ``methods.producer_on_mnn``); for each of
    ``batches`` other than the configured one, also As²d publishing batches of that size (``@batchN``);
    for each of ``budgets`` other than the pair's b, also fixed As²d at that budget (``@bN``);
    for each of ``kernels`` other than the target's, also target-only (1 and 2 threads) and, for those also
    in ``as2d_kernels`` (None: all of them), As²d with the target on those linear kernels (``/plain``,
    ``@plain``; ``models.packed_linear``), a second target in memory."""
    as2d_kernels = kernels if as2d_kernels is None else as2d_kernels
    main = host_setup(model_cfg)
    pair = main.pair
    if profile is not None:
        main.costs = profile_costs(profile)
        main.use_profile(profile)  # every method's target runs by this machine's kernel plan (kernels: auto)
    ms = [Method("target_only@1t", "native", main, 1, "target_only"),
          Method("target_only@2t", "native", main, 2, "target_only")]
    # HF assisted generate is driven as an encoder-decoder call (hf_assisted.hf_run); audio-LM pairs compare the
    # paper's native set (D.6.1: target-only, SD, SpecASR, As²d)
    if hf and not pair.audio_lm:
        ms += hf_methods(main)
    ms += [Method("sd", "native", main, 1, "sd"), Method("lookahead", "native", main, 1, "lookahead"),
           Method("asp", "native", main, 1, "asp"),
           Method(f"as2d/{main.source}", "native", main, 1, "as2d")]
    if main.costs is not None:
        ms += online_methods(main, main.costs, fallbacks=fallbacks, guess=guess)
    if mnn_producer:
        on_mnn = producer_on_mnn(main, model_cfg.get("mnn") or {})
        ms.append(Method(f"as2d/{main.source}@mnn", "native", on_mnn, 1, "as2d"))
        if main.costs is not None:
            ms += online_methods(on_mnn, main.costs, fallbacks=fallbacks, tag="@mnn", guess=guess)
    ms += variant_methods(main, budgets, batches)
    alone, with_kernels = kernel_methods(main, model_cfg, kernels, as2d_kernels)
    ms[2:2] = alone  # best target-only is the best over threads x kernels (x engines: mnn_target_only)
    ms += with_kernels
    if same_vocab_cfg is not None:
        ms += second_producer_methods(main, same_vocab_cfg, model_cfg.get("mnn") or {}, mnn_producer)
    # the pair's external chunk sources (model.external_sources), each in its own producer process
    ms += [Method(f"as2d/{name}", "native", chunk_setup(main, name), 1, "as2d")
           for name in pair.external if name in CHUNK_SOURCES]
    return ms




def hf_methods(main: HostSetup) -> list[Method]:
    """HF assisted generation with the serial drafter and, when it differs, with the producer's model
    (universal assisted generation across vocabularies: both tokenizers)."""
    pair = main.pair
    ms = [Method(f"hf_assisted/{main.serial_source}", "hf", main, 1, assistant=main.serial)]
    if main.source != main.serial_source:
        tok = None
        if pair.cross_vocabulary:  # universal assisted generation
            from transformers import AutoTokenizer

            from workbench.models.registry import ModelSpec, resolve_weights

            tok = (AutoTokenizer.from_pretrained(pair.target_dir),
                   AutoTokenizer.from_pretrained(resolve_weights(ModelSpec.from_dict(pair.producer_cfg))))
        ms.append(Method(f"hf_assisted/{main.source}", "hf", main, 1, assistant=pair.producer, tokenizers=tok))
    return ms


def variant_methods(main: HostSetup, budgets: Sequence[int], batches: Sequence[int]) -> list[Method]:
    """Fixed As²d at each other proposal budget (``@bN``) and publishing each other batch size (``@batchN``)."""
    ms = []
    for b in dict.fromkeys(budgets):
        if b != main.budget:  # fixed As²d at another proposal budget (a dev-chosen setting)
            other = dataclasses.replace(main, settings={**main.settings, "as2d": scheme_settings("as2d", b)})
            ms.append(Method(f"as2d/{main.source}@b{b}", "native", other, 1, "as2d"))
    for n in dict.fromkeys(batches):
        if n != main.batch_tokens:
            other = dataclasses.replace(main, producer=dataclasses.replace(main.producer_spec, batch_tokens=n))
            ms.append(Method(f"as2d/{main.source}@batch{n}", "native", other, 1, "as2d"))
    return ms


def kernel_methods(main: HostSetup, model_cfg: dict[str, Any], kernels: Sequence[str],
                   as2d_kernels: Sequence[str]) -> tuple[list[Method], list[Method]]:
    """For each of ``kernels`` other than the target's own: target-only on 1 and 2 threads (no producer
    process), and As²d for those in ``as2d_kernels``, each a second target in memory."""
    own = (model_cfg.get("target") or {}).get("kernels") or "plain"
    alone_ms: list[Method] = []
    as2d_ms: list[Method] = []
    for k in dict.fromkeys(kernels):
        if k != own:
            other_cfg = {**model_cfg, "target": {**model_cfg["target"], "kernels": k}}
            other = host_setup(other_cfg, verifier=main.verifier, producer=main.producer_spec.placement)
            alone = dataclasses.replace(other, producer=None)  # target-only starts no producer process
            alone_ms += [Method(f"target_only@1t/{k}", "native", alone, 1, "target_only"),
                         Method(f"target_only@2t/{k}", "native", alone, 2, "target_only")]
            if k in as2d_kernels:
                as2d_ms.append(Method(f"as2d/{other.source}@{k}", "native", other, 1, "as2d"))
    return alone_ms, as2d_ms


def second_producer_methods(main: HostSetup, same_vocab_cfg: dict[str, Any], mnn_cfg: dict[str, Any],
                            mnn_producer: bool) -> list[Method]:
    """As²d (and as2d_online with ``main``'s costs) with the second producer, the same-vocabulary model,
    and with ``mnn_producer`` that producer on MNN too."""
    setup2 = second_producer(main, same_vocab_cfg["drafter"])
    if setup2.source == main.source:
        return []
    ms = [Method(f"as2d/{setup2.source}", "native", setup2, 1, "as2d")]
    if main.costs is not None:
        ms += online_methods(setup2, main.costs)
    if mnn_producer:  # the same producer on MNN (faster than torch on some CPUs, slower on others)
        on_mnn2 = producer_on_mnn(setup2, mnn_cfg)
        ms.append(Method(f"as2d/{setup2.source}@mnn", "native", on_mnn2, 1, "as2d"))
        if main.costs is not None:
            ms += online_methods(on_mnn2, main.costs, tag="@mnn")
    return ms


__all__ = ["default_methods", "hf_methods", "kernel_methods", "profile_costs", "second_producer_methods",
           "variant_methods"]
