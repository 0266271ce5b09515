"""A benchmark method: one named way to decode a window (a scheme on a host setup, or HF generate).

``online_methods`` builds as2d_online priced by a machine's per-width round costs, and on two or
more CPUs the same with the producer's core joining once the producer has finished (``+cores``),
and that with a fallback rule that stops a producer whose candidates have not paid
(``+cores+fallback:AFTER:BELOW``, ``driver.Fallback``).
Both benches (``native.bench``, ``native.mnn_bench``) build their method sets from here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from workbench.decoding.costs import RoundCosts

from .driver import Fallback
from .episodes import HostSetup, all_cores, host_setup, scheme_settings
from .producer import ALLOWED_CPUS

# The method families of the host benchmark (``native.methods`` of job native_host): each scheme's
# native runs, and HF assisted generation (a baseline driven by transformers' generate).
FAMILIES = ("target_only", "hf_assisted", "sd", "lookahead", "asp", "as2d", "as2d_online")


class Method:
    def __init__(self, name: str, kind: str, setup: HostSetup | None = None, threads: int = 1,
                 scheme: str = "", assistant: Any = None, tokenizers: tuple[Any, Any] | None = None) -> None:
        self.name, self.kind, self.setup, self.threads = name, kind, setup, threads
        self.scheme, self.assistant, self.tokenizers = scheme, assistant, tokenizers

    @property
    def family(self) -> str:
        """Its entry in ``FAMILIES``: HF generate is ``hf_assisted``, a native run its scheme."""
        return "hf_assisted" if self.kind == "hf" else self.scheme


def online_cap(costs: RoundCosts) -> int:
    """as2d_online's widest chain on this machine: every width its calibration priced (up to K = 16).
    The rule then picks each round's width from those costs; the pair's fixed b stays fixed As²d's."""
    return max(1, min(costs.widest, 16) - 1)


def online_methods(setup: HostSetup, costs: RoundCosts, prefix: str = "",
                   fallbacks: Sequence[Fallback] = (), tag: str = "", guess: bool = False) -> list[Method]:
    """as2d_online priced by this machine's per-width ``costs`` (widths up to ``online_cap``) and, on two
    or more CPUs, the same with the producer's core joining once the producer has finished (``+cores``,
    ``driver.JoiningCores``), and that with each of ``fallbacks`` (``+cores+fallback:AFTER:BELOW``);
    method names start with ``prefix`` (the MNN bench's ``mnn/``); ``tag`` follows the source's name
    (``@mnn``: the producer on another engine). With ``guess``, each again with the substitution guess
    after a rejection (``+guess``: as2d_adaptive with its one source and no drafter, i.e. the online
    budget whose guessed chains keep their own acceptance estimate; docs/adaptive.md)."""
    cap = online_cap(costs)
    online = dataclasses.replace(setup, costs=costs, settings={
        **setup.settings, "as2d_online": scheme_settings("as2d_online", cap),
        "as2d_adaptive": scheme_settings("as2d_adaptive", cap, {"hybrid": False, "guess": True})})
    name = f"{prefix}as2d_online/{setup.source}{tag}"
    variants = [(name, "as2d_online")] + ([(f"{name}+guess", "as2d_adaptive")] if guess else [])
    setups = [("", online)]
    if len(ALLOWED_CPUS) > 1:
        joined = dataclasses.replace(online, widen=all_cores())
        setups += [("+cores", joined)] + [(f"+cores+{fb.name}", dataclasses.replace(joined, fallback=fb))
                                          for fb in dict.fromkeys(fallbacks)]
    ms = [Method(f"{base}{suffix}", "native", s, 1, scheme) for base, scheme in variants for suffix, s in setups]
    return ms


def second_producer(setup: HostSetup, drafter: dict[str, Any]) -> HostSetup:
    """``setup``'s loaded target with another producer (``drafter``: a ``conf/model`` drafter block,
    e.g. the same-vocabulary Whisper-base int8) publishing batches of the setup's size, on the same
    verifier and producer placements: one target in memory, a producer choice made on dev."""
    assert setup.producer is not None
    block = {**drafter, "batch_tokens": setup.pair.batch_tokens}
    return host_setup(setup.pair.with_producer(block), verifier=setup.verifier, producer=setup.producer.placement)


def producer_on_mnn(setup: HostSetup, mnn: dict[str, Any]) -> HostSetup:
    """``setup`` with its producer on MNN (``mnn``: the pair's runtime block), the target unchanged:
    a faster producer raises readiness; outputs are the target's either way (the producer only
    proposes). The producer process loads the MNN export (``models.mnn``), converted once and cached."""
    assert setup.producer is not None
    drafter = {**setup.producer.drafter, "engine": "mnn", "mnn": dict(mnn)}
    return dataclasses.replace(setup, producer=dataclasses.replace(setup.producer, drafter=drafter))


__all__ = ["FAMILIES", "Method", "online_cap", "online_methods", "producer_on_mnn", "second_producer"]
