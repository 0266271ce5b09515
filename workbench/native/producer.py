"""The producer process: a target-decoupled drafter that publishes into the shared buffer.

It is long-lived (the model loads once) and serves one window at a time; the messages are the
typed ones of ``messages.py``:

    parent                                  producer process
                                       <--  Loaded(placement)
    PrepareWindow(id, audio, cap,      -->  audio prefill (encoder) and its own prompt prefill
                  instruction)              (prompted with the request's instruction, audio LMs)
                                       <--  Ready(id)
    target prefill; t0; start.set
                                            generate greedily on its own history, convert (Tok_T),
                                            publish ``batch_tokens``-token batches, one span per forward
                                            (spoken QA: cumulative prefixes, each token at its arrival)
    target EOS: stop.set                    stops at the next forward boundary (drain)
                                       <--  Done(forwards)
    Quit()                             -->  exit (any exception: Failed(error, traceback), exit 1)

It reads only the request audio, the instruction (prompt) and its own history -- never target
text or target KV (Appendix C.1).
"""

from __future__ import annotations

import itertools
import os
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from workbench.decoding.cumulative import BATCHES, PUBLICATIONS, CumulativePrefixPublisher

from .chunks import ChunkProducerModel, is_chunk_block
from .liveness import Liveness, ParentGone
from .messages import Done, Failed, Loaded, PrepareWindow, Quit, Ready
from .shared import SharedBuffer

START_TIMEOUT_S = 600.0  # "ready" -> start: one target prefill, even on the slowest host we run
IDLE_TIMEOUT_S = 6 * 3600.0  # between windows the parent may run other methods for a long time


# CPUs this process may use, read once at import. ``Placement.apply`` narrows the calling thread's
# affinity, so a later reading can see one core: a producer placed from it shared the verifier's core
# and ran at half speed after an in-process calibration.
ALLOWED_CPUS: tuple[int, ...] = tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else ()


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

    @classmethod
    def current(cls) -> Placement:
        """This thread's placement now: what to ``apply`` again after placing it elsewhere."""
        import torch

        cpus = tuple(sorted(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else None
        return cls(torch.get_num_threads(), cpus)


@contextmanager
def restoring_placement() -> Iterator[None]:
    """Run a block that applies placements, then give this thread back its threads and CPUs."""
    caller = Placement.current()
    try:
        yield
    finally:
        caller.apply()


@dataclass(frozen=True)
class ProducerSpec:
    """What the producer process needs to build itself (picklable: plain data only)."""

    drafter: dict[str, Any]  # a conf/model drafter block (ModelSpec fields)
    target_tokenizer: str | None = None  # target tokenizer.json for Tok_T (cross vocabulary)
    target_eos: int | None = None
    batch_tokens: int = 8
    placement: Placement = field(default_factory=Placement)
    # BATCHES: ``batch_tokens``-token batches; CUMULATIVE_PREFIX: the spoken-QA buffer (D.1.2), fed the
    # growing prefix generated so far, each token at its own arrival time (``decoding.cumulative``)
    publication: str = BATCHES

    def __post_init__(self) -> None:
        if self.publication not in PUBLICATIONS:
            raise ValueError(f"publication: {self.publication!r} is not one of {list(PUBLICATIONS)}")


class ProducerModel:
    """The producer's model inside its process: loaded once, one fresh token stream per window."""

    def __init__(self, spec: ProducerSpec) -> None:
        from workbench.models.lm_sessions import is_audio_lm
        from workbench.models.registry import ModelSpec, load_audio_lm_spec, load_whisper_spec

        ms = ModelSpec.from_dict(spec.drafter)
        self.audio_lm = is_audio_lm(ms.family)
        if ms.family != "whisper" and not self.audio_lm:
            raise ValueError(f"producer {ms.name}: native producers run whisper or audio-LM families, not {ms.family}")
        self.spec = spec
        if self.audio_lm:  # Qwen3-ASR / Qwen2-Audio / Omni thinker: its own processor and prompt
            self.bundle = load_audio_lm_spec(ms)
        elif spec.drafter.get("engine") == "mnn":  # the same producer on MNN (workbench.models.mnn)
            from workbench.models.mnn.runtime import MnnSettings
            from workbench.models.mnn.whisper import load_mnn_spec

            self.bundle = load_mnn_spec(ms, MnnSettings.from_dict(spec.drafter.get("mnn")), progress=False)
        else:
            self.bundle = load_whisper_spec(ms)

    def encode(self, audio: Any, instruction: str | None = None) -> Any:
        """The audio prefill (features + encoder): a decoder state ready for the prompt.

        ``instruction``: the request's own (translation, QA question) for audio LMs; Whisper has none."""
        from workbench.models.whisper import WhisperDecoderState

        if self.audio_lm:  # the processor's prompt; the audio KV is built at the first iteration step
            from workbench.models.lm_sessions import lm_prompt

            return lm_prompt(self.bundle, self.spec.drafter.get("prompt"), audio, instruction)
        if hasattr(self.bundle, "decoder_state"):  # MNN
            return self.bundle.decoder_state(self.bundle.features(audio))
        return WhisperDecoderState(self.bundle, self.bundle.features(audio))

    def stream(self, audio: Any, cap: int, encoded: Any = None, instruction: str | None = None,
               stop: Callable[[], bool] | None = None) -> Iterator[Any]:
        """Prepare the audio state now (before the clock) and return the token iterator.

        ``encoded``: an ``encode`` result to start from with an empty decoder cache (calibration
        reuses one encoding across passes). ``instruction``: the request's (audio LMs). ``stop``:
        the window's stop request, seen by the vocabulary conversion after every drafter token
        (``convert_stream``), so a held-back word cannot hide it."""
        from workbench.models.drafting import AutoregressiveProducer

        bundle, spec = self.bundle, self.spec
        if self.audio_lm:
            return self._lm_stream(audio, cap, encoded, instruction, stop)
        proto = bundle.protocol
        state = self.encode(audio) if encoded is None else _fresh(encoded)  # audio prefill, outside the clock
        n = min(cap, bundle.config.max_target_positions - len(proto.prompt_ids))
        stream: Iterator[Any] = iter(AutoregressiveProducer(lambda: state, proto.prompt_ids, proto.eos_id, n))
        if spec.drafter.get("vocabulary") == "cross":
            from workbench.models.tokenizer import TextCodec
            from workbench.models.vocab import VocabularyConverter, convert_stream

            if spec.target_tokenizer is None or bundle.codec is None:
                raise ValueError(f"producer {spec.drafter.get('name')}: cross-vocabulary needs both tokenizers")
            conv = VocabularyConverter(bundle.codec, TextCodec.from_file(spec.target_tokenizer), proto.eos_id,
                                       spec.target_eos)
            stream = convert_stream(stream, conv, stop)
        return stream

    def _lm_stream(self, audio: Any, cap: int, encoded: Any = None, instruction: str | None = None,
                   stop: Callable[[], bool] | None = None) -> Iterator[Any]:
        from workbench.models.audio_lm import audio_lm_producer
        from workbench.models.lm_sessions import lm_codec, lm_eos, lm_max_positions

        p = self.encode(audio, instruction) if encoded is None else encoded  # a fresh session per iteration
        n = min(cap, lm_max_positions(self.bundle))
        stream: Iterator[Any] = iter(audio_lm_producer(self.bundle.model, p.audio_ids, p.instruction_ids,
                                                       p.audio_inputs, p.eos_id, n, p.suppress_ids))
        if self.spec.drafter.get("vocabulary") == "cross":
            from workbench.models.tokenizer import TextCodec
            from workbench.models.vocab import VocabularyConverter, convert_stream

            if self.spec.target_tokenizer is None:
                name = self.spec.drafter.get("name")
                raise ValueError(f"producer {name}: cross-vocabulary needs the target tokenizer")
            conv = VocabularyConverter(lm_codec(self.bundle), TextCodec.from_file(self.spec.target_tokenizer),
                                       lm_eos(self.bundle), self.spec.target_eos)
            stream = convert_stream(stream, conv, stop)
        return stream


    @staticmethod
    def prefill(stream: Iterator[Any]) -> Iterator[Any]:
        """The producer's own prompt prefill, before the clock (``prefilled``)."""
        return prefilled(stream)[1]

    def publish(self, stream: Iterator[Any], shared: SharedBuffer, stop: Any, t_begin: float, cap: int) -> int:
        """Generate on the clock and publish (``batch_tokens`` batches or cumulative prefixes)."""
        return _produce(stream, shared, stop, self.spec.batch_tokens, t_begin, self.spec.publication)


def producer_model(spec: ProducerSpec) -> Any:
    """The model the producer process serves windows with: the pair's drafter, or a chunk source."""
    return ChunkProducerModel(spec) if is_chunk_block(spec.drafter) else ProducerModel(spec)


def _fresh(encoded: Any) -> Any:
    """The same encoder output with an empty decoder cache (what a new window's producer sees)."""
    import copy

    if hasattr(encoded, "fork"):  # MNN: shares the cross KV, starts an empty self-attention KV
        return encoded.fork()

    from transformers import DynamicCache, EncoderDecoderCache

    state = copy.copy(encoded)
    state.cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
    state.length = 0
    return state


def prefilled(stream: Iterator[Any]) -> tuple[Any, Iterator[Any]]:
    """Take the first token now: the producer's own prompt prefill yields it, like the target's
    prefill yields the first root; both happen before the decode clock starts (A.3, D.5.1)."""
    first = next(stream, None)
    return first, itertools.chain([] if first is None else [first], stream)


def _produce_prefixes(stream: Iterator[Any], shared: SharedBuffer, stop: Any, t_begin: float) -> int:
    """Spoken QA (D.1.2): after every forward, the whole prefix generated so far is observed; the
    tokens it adds are published at their own arrival times (one before the clock: at its start)."""
    pub = CumulativePrefixPublisher(shared.publish)
    prefix: list[int] = []
    arrivals: list[float] = []
    confs: list[float | None] = []
    prev = t_begin
    for item in stream:
        prefix.append(item.token)
        arrivals.append(max(item.t_generated, t_begin))
        confs.append(item.confidence)
        pub.observe(prefix, arrivals, confs)
        now = time.perf_counter()
        shared.add_span(prev, now)
        prev = now
        if stop.is_set():
            break
    return len(prefix)


def _produce(stream: Iterator[Any], shared: SharedBuffer, stop: Any, batch_tokens: int, t_begin: float,
             publication: str = BATCHES) -> int:
    if publication != BATCHES:
        return _produce_prefixes(stream, shared, stop, t_begin)
    batch, confs, counts, n = [], [], [], 0
    prev = t_begin
    for item in stream:
        # One forward per drafter token; conversion and publication belong to the source's span.
        batch.append(item.token)
        confs.append(item.confidence)
        counts.append(item.forwards)
        n = counts[-1] or n + 1  # drafter forwards so far (Done): one per token unless the stream counts them
        if len(batch) == batch_tokens:
            shared.publish(batch, item.t_generated, None if None in confs else confs, counts)
            batch, confs, counts = [], [], []
        now = time.perf_counter()
        shared.add_span(prev, now)
        prev = now
        if stop.is_set():
            break
    if batch:
        shared.publish(batch, time.perf_counter(), None if None in confs else confs, counts)
    return n


def producer_main(conn: Any, shared: SharedBuffer, start: Any, stop: Any, spec: ProducerSpec) -> None:
    """Entry point of the producer process.

    Every wait is bounded and watches the parent (``liveness``): a parent that dies after "ready"
    no longer leaves this process waiting forever on ``start`` with its semaphores held."""
    life = Liveness()
    life.watch()  # a parent killed mid-window (SIGKILL: no Quit) must not leave this process behind
    try:
        placement = spec.placement.apply()
        model = producer_model(spec)
        conn.send(Loaded(placement))
        while True:
            msg = life.recv(conn, IDLE_TIMEOUT_S, "waiting for the next window")
            if isinstance(msg, Quit):
                return
            if not isinstance(msg, PrepareWindow):
                raise TypeError(f"producer: unexpected message {msg!r}")
            shared.reset()
            stream = model.prefill(model.stream(msg.audio, msg.cap, instruction=msg.instruction, stop=stop.is_set))
            conn.send(Ready(msg.window_id))
            life.wait_event(start, START_TIMEOUT_S, f"waiting to start window {msg.window_id}")
            t_begin = time.perf_counter()
            n = model.publish(stream, shared, stop, t_begin, msg.cap)
            shared.finish(time.perf_counter())
            conn.send(Done(n))
    except (EOFError, KeyboardInterrupt, ParentGone):
        return
    except BaseException as err:  # report, then exit non-zero: the parent turns it into one clear error
        report_failure(conn, err)
        raise SystemExit(1) from err


@contextmanager
def spawn_start_method() -> Iterator[None]:
    """Start a ``spawn`` child whatever this process's own start method is.

    A spawned child re-applies the parent's process-wide start method before it runs anything.
    Inside a joblib (loky) worker -- a Hydra sweep's job -- that method is ``loky``, which the
    child cannot set up: it died at once with "cannot find context for 'loky'". The method is
    ``spawn`` while the child starts, and the worker's own again after."""
    import multiprocessing as mp

    method = mp.get_start_method(allow_none=True)
    if method in (None, "spawn", "fork", "forkserver"):
        yield
        return
    mp.set_start_method("spawn", force=True)
    try:
        yield
    finally:
        mp.set_start_method(method, force=True)


def report_failure(conn: Any, err: BaseException) -> None:
    try:
        conn.send(Failed(f"{type(err).__name__}: {err}", traceback.format_exc()))
    except Exception:
        pass
