"""External chunked sources (C.1) on fixed 2.56 s chunks: PocketSphinx en-US (offline) and a
transformers ``ParakeetForCTC`` (for users with weights, see ``registry.load_ctc_spec``).

Each chunk's words are published atomically once the chunk is decoded; external sources carry no
confidence (``None``), and none is synthesized. Text goes through Tok_T into the target
vocabulary; a chunk boundary is a word boundary, so every chunk's text is final.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np

from workbench.models.tokenizer import TextCodec

CHUNK_SECONDS = 2.56
SAMPLE_RATE = 16000
# the native chunk producer's PocketSphinx block: how late a stop request is seen inside a chunk
BLOCK_SECONDS = 0.08


class ChunkPublication(NamedTuple):
    chunk: int
    text: str
    tokens: list[int]  # target vocabulary
    publish_time: float  # seconds since the source started
    confidences: None = None


def _spaced(words: str) -> str:
    """Whisper/Qwen-style text: every word carries its leading space."""
    return "".join(f" {w}" for w in words.split())


def pocketsphinx_decoder() -> Any:
    """PocketSphinx's bundled en-US decoder (loading it takes a while: build it once, reuse it)."""
    from pocketsphinx import Decoder

    return Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")


class SphinxDecoder:
    """A reusable PocketSphinx decoder that knows whether an utterance is still open.

    A chunk stopped between blocks leaves its utterance open (closing it runs the final search:
    work nobody reads), and ``reset`` closes it before the next window, outside the clock."""

    def __init__(self, decoder: Any = None) -> None:
        self.decoder = pocketsphinx_decoder() if decoder is None else decoder
        self.open = False
        self.cmn = self.decoder.get_cmn()  # the model's initial cepstral mean

    def start(self, fresh: bool) -> None:
        """Open a chunk's utterance; ``fresh``: from the initial cepstral mean, so a block-fed chunk
        (live normalization) depends on its own samples only, not on the chunks and windows before."""
        if fresh:
            self.decoder.set_cmn(self.cmn)
        self.decoder.start_utt()
        self.open = True

    def reset(self) -> None:
        if self.open:
            self.decoder.end_utt()
            self.open = False


def pocketsphinx_chunks(
    audio: np.ndarray, target: TextCodec, chunk_seconds: float = CHUNK_SECONDS,
    clock: Callable[[], float] = time.perf_counter, decoder: Any = None, *,
    block_seconds: float | None = None, stop: Callable[[], bool] | None = None,
    on_block: Callable[[int, int], None] | None = None,
) -> Iterator[ChunkPublication]:
    """Decode ``audio`` (mono float32 16 kHz) chunk by chunk with PocketSphinx's bundled model
    (``decoder``: a ``SphinxDecoder`` or a decoder from ``pocketsphinx_decoder`` to reuse; each chunk
    is its own utterance).

    ``block_seconds=None`` hands each chunk to PocketSphinx whole (one call, whole-utterance
    normalization). A number feeds the chunk in blocks of that length (live normalization from the
    model's initial mean, so the words can differ from the whole-chunk call) and asks ``stop``
    before every block: a stop request ends the stream within one block, and the interrupted chunk
    publishes nothing (chunk-atomic, C.1). ``on_block(chunk, block)`` is told of every block before it is decoded."""
    sphinx = decoder if isinstance(decoder, SphinxDecoder) else SphinxDecoder(decoder)
    sphinx.reset()
    pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype(np.int16)
    n = int(round(chunk_seconds * SAMPLE_RATE))
    b = n if block_seconds is None else max(1, int(round(block_seconds * SAMPLE_RATE)))
    asked = stop or (lambda: False)
    t0 = clock()
    for i, start in enumerate(range(0, len(pcm), n)):
        chunk = pcm[start : start + n]
        sphinx.start(fresh=block_seconds is not None)
        for j, at in enumerate(range(0, len(chunk), b)):
            if asked():
                return  # the open utterance is closed by the next window's reset, off the clock
            if on_block is not None:
                on_block(i, j)
            sphinx.decoder.process_raw(chunk[at : at + b].tobytes(), full_utt=block_seconds is None)
        sphinx.decoder.end_utt()
        sphinx.open = False
        hyp = sphinx.decoder.hyp()
        words = hyp.hypstr.strip() if hyp is not None else ""
        text = _spaced(words)
        yield ChunkPublication(i, text, target.encode(text) if text else [], clock() - t0)


def parakeet_ctc_features(audio: np.ndarray, processor: Any, chunk_seconds: float = CHUNK_SECONDS) -> list[Any]:
    """Each chunk's processor features (audio preparation only: no recognition)."""
    n = int(round(chunk_seconds * SAMPLE_RATE))
    return [processor(audio[s : s + n], sampling_rate=SAMPLE_RATE, return_tensors="pt")
            for s in range(0, len(audio), n)]


def parakeet_ctc_chunks(
    audio: np.ndarray, target: TextCodec, model: Any, processor: Any, chunk_seconds: float = CHUNK_SECONDS,
    clock: Callable[[], float] = time.perf_counter, *, features: list[Any] | None = None,
    stop: Callable[[], bool] | None = None,
) -> Iterator[ChunkPublication]:
    """Greedy CTC per chunk (argmax, repeats merged, blanks dropped by the Parakeet tokenizer).

    Each chunk is encoded on its own, so a chunk's publication depends only on its samples.
    ``features``: ``parakeet_ctc_features`` of ``audio``, prepared earlier (else computed per chunk).
    ``stop`` is asked before every chunk's features and again before its forward; a stop request
    ends the stream there and publishes nothing of that chunk."""
    import torch

    asked = stop or (lambda: False)
    n = int(round(chunk_seconds * SAMPLE_RATE))
    dev = next(model.parameters()).device
    t0 = clock()
    for i, start in enumerate(range(0, len(audio), n)):
        if asked():
            return
        inputs = (processor(audio[start : start + n], sampling_rate=SAMPLE_RATE, return_tensors="pt")
                  if features is None else features[i])
        if asked():
            return
        with torch.inference_mode():
            seq = model.generate(**{k: v.to(dev) for k, v in inputs.items()})
        text = _spaced(processor.batch_decode(seq, skip_special_tokens=True)[0])
        yield ChunkPublication(i, text, target.encode(text) if text else [], clock() - t0)


def publish_chunks(pubs: Iterable[ChunkPublication], publish: Callable[..., object]) -> int:
    """Drive a chunked source into ``PublicationBuffer.publish``: one batch per non-empty chunk,
    no confidences. Returns the number of batches published."""
    count = 0
    for p in pubs:
        if p.tokens:
            publish(p.tokens, p.publish_time, None)
            count += 1
    return count
