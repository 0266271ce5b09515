"""The producer process: a target-decoupled drafter that publishes into the shared buffer.

It is long-lived (the model loads once) and serves one window at a time:

    parent                          producer process
    ("window", id, audio, cap) -->  audio prefill (encoder), own prompt ready
                               <--  ("ready",)
    target prefill; t0; start.set
                                    generate greedily on its own history, convert (Tok_T),
                                    publish 8-token batches, record one span per forward
    target EOS: stop.set       -->  stops at the next forward boundary (drain)
                               <--  ("done", tokens, forwards)

It reads only the request audio, the instruction (prompt) and its own history -- never target
text or target KV (Appendix C.1).
"""

from __future__ import annotations

import itertools
import os
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .shared import SharedBuffer


@dataclass(frozen=True)
class Placement:
    """Threads and CPU affinity of one process; ``cpus=None`` leaves the OS default."""

    threads: int = 1
    cpus: tuple[int, ...] | None = None

    def apply(self) -> dict[str, Any]:
        import torch

        torch.set_num_threads(self.threads)
        if self.cpus is not None and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, set(self.cpus))
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        return {"threads": torch.get_num_threads(), "cpus": cpus, "pid": os.getpid()}


@dataclass(frozen=True)
class ProducerSpec:
    """What the producer process needs to build itself (picklable: plain data only)."""

    drafter: dict[str, Any]  # a conf/model drafter block (ModelSpec fields)
    target_tokenizer: str | None = None  # target tokenizer.json for Tok_T (cross vocabulary)
    target_eos: int | None = None
    batch_tokens: int = 8
    placement: Placement = field(default_factory=Placement)


def _build_stream(spec: ProducerSpec, bundle: Any, audio: Any, cap: int, state: Any = None) -> Iterator[Any]:
    """Prepare the audio state now (before the clock) and return the token iterator.

    ``state``: a fresh decoder state on already-encoded audio (calibration reuses one encoding)."""
    from workbench.models.drafting import AutoregressiveProducer
    from workbench.models.whisper import WhisperDecoderState

    proto = bundle.protocol
    if state is None:
        state = WhisperDecoderState(bundle, bundle.features(audio))  # audio prefill, outside the clock
    n = min(cap, bundle.config.max_target_positions - len(proto.prompt_ids))
    stream: Iterator[Any] = iter(AutoregressiveProducer(lambda: state, proto.prompt_ids, proto.eos_id, n))
    if spec.drafter.get("vocabulary") == "cross":
        from workbench.models.tokenizer import TextCodec
        from workbench.models.vocab import VocabularyConverter, convert_stream

        if spec.target_tokenizer is None or bundle.codec is None:
            raise ValueError(f"producer {spec.drafter.get('name')}: cross-vocabulary needs both tokenizers")
        conv = VocabularyConverter(bundle.codec, TextCodec.from_file(spec.target_tokenizer), proto.eos_id,
                                   spec.target_eos)
        stream = convert_stream(stream, conv)
    return stream


def _load(spec: ProducerSpec) -> Any:
    from workbench.models.registry import ModelSpec, load_whisper_spec

    ms = ModelSpec.from_dict(spec.drafter)
    if ms.family != "whisper":
        raise ValueError(f"producer {ms.name}: native producers support the whisper family so far, not {ms.family}")
    return load_whisper_spec(ms)


def _produce(stream: Iterator[Any], shared: SharedBuffer, stop: Any, batch_tokens: int, t_begin: float) -> int:
    batch, confs, n = [], [], 0
    prev = t_begin
    for item in stream:
        # One forward per drafter token; conversion and publication belong to the source's span.
        batch.append(item.token)
        confs.append(item.confidence)
        n += 1
        if len(batch) == batch_tokens:
            shared.publish(batch, item.t_generated, None if None in confs else confs)
            batch, confs = [], []
        now = time.perf_counter()
        shared.add_span(prev, now)
        prev = now
        if stop.is_set():
            break
    if batch:
        shared.publish(batch, time.perf_counter(), None if None in confs else confs)
    return n


def producer_main(conn: Any, shared: SharedBuffer, start: Any, stop: Any, spec: ProducerSpec) -> None:
    """Entry point of the producer process."""
    try:
        placement = spec.placement.apply()
        bundle = _load(spec)
        conn.send(("loaded", placement))
        while True:
            msg = conn.recv()
            if msg[0] == "quit":
                return
            _, window_id, audio, cap = msg
            shared.reset()
            stream = _build_stream(spec, bundle, audio, cap)
            # The producer's own prompt prefill yields its first token, like the target's prefill
            # yields the first root: both happen before the decode clock starts (A.3, D.5.1).
            first = next(stream, None)
            stream = itertools.chain([] if first is None else [first], stream)
            conn.send(("ready", window_id))
            start.wait()
            t_begin = time.perf_counter()
            n = _produce(stream, shared, stop, spec.batch_tokens, t_begin)
            shared.finish(time.perf_counter())
            conn.send(("done", n))
    except (EOFError, KeyboardInterrupt):
        return
    except BaseException as err:  # report, then exit non-zero: the parent turns it into one clear error
        try:
            conn.send(("error", f"{type(err).__name__}: {err}", traceback.format_exc()))
        except Exception:
            pass
        raise SystemExit(1) from err
