"""Native chunk producers (C.1, A.1, B.4): an external recognizer beside the target.

A chunk source reads the request audio in fixed chunks (2.56 s, ``models.external.CHUNK_SECONDS``)
and publishes each chunk's words atomically, in the target vocabulary (Tok_T), the moment the chunk
is decoded; it carries no confidence (``None``) and has no decoder prompt, so nothing of it runs
before the clock but loading the recognizer and preparing the audio. It sees the target's stop
request inside a chunk (PocketSphinx between small blocks, Parakeet before a chunk's forward), so the
drain after EOS (A.3) is at most one block; the interrupted chunk publishes nothing. Its
publications go through the same shared buffer as the autoregressive producer's, so every As²d
variant reads them unchanged.

``ChunkProducerModel`` has the producer process's model interface (``stream``, ``prefill``,
``publish``), beside ``producer.ProducerModel``; ``chunk_setup`` turns a host setup into one whose
producer process runs a chunk source. Sources: ``pocketsphinx_en`` (PocketSphinx's bundled en-US
model) and ``parakeet_ctc`` (a transformers ``ParakeetForCTC``, from the pair's ``parakeet_ctc:``
block).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from workbench.errors import ConfigError

from .shared import SharedBuffer

CHUNK_FAMILY = "external_chunks"  # the producer block's family for a chunk source
CHUNK_SOURCES = ("pocketsphinx_en", "parakeet_ctc")


def chunk_block(name: str, parakeet: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The producer block of chunk source ``name`` (plain data: it crosses into the producer process)."""
    if name not in CHUNK_SOURCES:
        raise ConfigError("model.external_sources", f"no native chunk producer for {name!r}; "
                          f"choose from {list(CHUNK_SOURCES)}")
    block: dict[str, Any] = {"family": CHUNK_FAMILY, "name": name}
    if name == "parakeet_ctc":
        if not parakeet:
            raise ConfigError("model.parakeet_ctc", "the parakeet_ctc chunk source needs its block "
                              "(name, family: parakeet_ctc, local_path, chunk_seconds)")
        block["ctc"] = dict(parakeet)
        block["chunk_seconds"] = float(parakeet.get("chunk_seconds") or 2.56)
    return block


def is_chunk_block(block: Mapping[str, Any]) -> bool:
    return block.get("family") == CHUNK_FAMILY


def chunk_setup(setup: Any, name: str) -> Any:
    """``setup`` (an ``episodes.HostSetup``) with its producer process running chunk source ``name``;
    the target, placements and scheme settings stay. The chunks reach the target vocabulary through
    the target's own tokenizer.json."""
    pair = setup.pair
    block = chunk_block(name, pair.config.get("parakeet_ctc"))
    tokenizer = pair.target_dir / "tokenizer.json"
    if not tokenizer.exists():
        raise ConfigError("model.external_sources", f"chunk source {name} publishes through the target's "
                          f"tokenizer, and {tokenizer} does not exist")
    producer = dataclasses.replace(setup.producer, drafter=block, target_tokenizer=str(tokenizer))
    return dataclasses.replace(setup, producer=producer)


class ChunkProducerModel:
    """A chunk source inside the producer process: loaded once, one chunk stream per window."""

    def __init__(self, spec: Any) -> None:
        from workbench.models.tokenizer import TextCodec

        block = spec.drafter
        if spec.target_tokenizer is None:
            raise ConfigError("model.external_sources", f"chunk source {block['name']} needs the target tokenizer")
        self.name = str(block["name"])
        self.codec = TextCodec.from_file(spec.target_tokenizer)
        self.chunk_seconds = float(block.get("chunk_seconds") or 2.56)
        self.decoder: Any = None
        self.ctc: Any = None
        self.on_block: Callable[[int, int], None] | None = None  # told of each PocketSphinx block (chunk, block)
        if self.name == "pocketsphinx_en":
            from workbench.models.external import SphinxDecoder

            self.decoder = SphinxDecoder()
        else:
            from workbench.models.registry import ModelSpec, load_ctc_spec

            self.ctc = load_ctc_spec(ModelSpec.from_dict(dict(block["ctc"])))

    def stream(self, audio: Any, cap: int, encoded: Any = None, instruction: str | None = None,
               stop: Callable[[], bool] | None = None) -> Iterator[Any]:
        """The chunk publications of ``audio``, decoded lazily: each chunk only when asked for, so all
        recognition runs on the clock. Before the clock: the recognizer's reset (a chunk the last
        window's stop interrupted is closed here) and, for Parakeet, every chunk's features (audio
        preparation, like the Whisper producer's features and encoder). ``stop`` is seen inside a
        chunk: PocketSphinx between ``BLOCK_SECONDS`` blocks, Parakeet before each chunk and before
        its forward; an interrupted chunk publishes nothing. ``cap``, ``encoded`` and ``instruction``
        do not apply (a recognizer takes no prompt; ``publish`` stops at ``cap`` tokens)."""
        from workbench.models.external import (
            BLOCK_SECONDS,
            parakeet_ctc_chunks,
            parakeet_ctc_features,
            pocketsphinx_chunks,
        )

        if self.decoder is not None:
            self.decoder.reset()
            return pocketsphinx_chunks(audio, self.codec, self.chunk_seconds, decoder=self.decoder,
                                       block_seconds=BLOCK_SECONDS, stop=stop, on_block=self.on_block)
        features = parakeet_ctc_features(audio, self.ctc.processor, self.chunk_seconds)
        return parakeet_ctc_chunks(audio, self.codec, self.ctc.model, self.ctc.processor, self.chunk_seconds,
                                   features=features, stop=stop)

    @staticmethod
    def prefill(stream: Iterator[Any]) -> Iterator[Any]:
        """No prompt prefill: a chunk source's first chunk is decoded after the clock starts (its
        recognition is its drafting; the audio preparation happened in ``stream``)."""
        return stream

    @staticmethod
    def publish(stream: Iterator[Any], shared: SharedBuffer, stop: Any, t_begin: float, cap: int) -> int:
        """Publish every non-empty chunk atomically as it is decoded (no confidences); one busy span
        per chunk, and one for the chunk a stop request interrupted (it publishes nothing); stop at
        ``cap`` tokens."""
        n, prev = 0, t_begin
        for chunk in stream:
            now = time.perf_counter()
            tokens = list(chunk.tokens)[: max(cap - n, 0)]
            if tokens:
                shared.publish(tokens, now, None)
                n += len(tokens)
            shared.add_span(prev, now)
            prev = now
            if stop.is_set() or n >= cap:
                return n
        end = time.perf_counter()  # the stream ended: after the audio's last chunk, or stopped inside a chunk
        if stop.is_set() and end > prev:  # the interrupted chunk's work (it published nothing)
            shared.add_span(prev, end)
        return n


@dataclasses.dataclass(frozen=True)
class ChunkTiming:
    """One chunk of a native chunk-source run, on the decode clock (s): when its recognition ran,
    how many tokens it published at its end (0: no words, or interrupted by the stop request), and
    how many tokens the target had committed by then (the root from prefill included)."""

    chunk: int
    start: float
    end: float
    published: int
    committed: int

    @property
    def decode_s(self) -> float:
        return self.end - self.start


def chunk_timeline(result: Any) -> list[ChunkTiming]:
    """Where a chunk-source run's time went, from its own records (a ``driver.NativeResult``): one row
    per producer busy span (a chunk), against the target's progress. The drain is
    ``result.time - result.t_eos``."""
    spans = sorted((s[2], s[3]) for s in result.stages if s[0] == "producer")
    ends = sorted((r.t_end, len(r.committed)) for r in result.records)
    rows = []
    for i, (a, b) in enumerate(spans):
        published = sum(1 for t in result.producer_times if abs(t - b) <= 1e-9)
        committed = 1 + sum(n for t, n in ends if t <= b)
        rows.append(ChunkTiming(i, a, b, published, committed))
    return rows


__all__ = ["CHUNK_FAMILY", "CHUNK_SOURCES", "ChunkProducerModel", "ChunkTiming", "chunk_block", "chunk_setup",
           "chunk_timeline", "is_chunk_block"]
