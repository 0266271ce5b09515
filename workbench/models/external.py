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


def pocketsphinx_chunks(
    audio: np.ndarray, target: TextCodec, chunk_seconds: float = CHUNK_SECONDS,
    clock: Callable[[], float] = time.perf_counter, decoder: Any = None,
) -> Iterator[ChunkPublication]:
    """Decode ``audio`` (mono float32 16 kHz) chunk by chunk with PocketSphinx's bundled model
    (``decoder``: one from ``pocketsphinx_decoder`` to reuse; each chunk is its own utterance)."""
    decoder = pocketsphinx_decoder() if decoder is None else decoder
    pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype(np.int16)
    n = int(round(chunk_seconds * SAMPLE_RATE))
    t0 = clock()
    for i, start in enumerate(range(0, len(pcm), n)):
        decoder.start_utt()
        decoder.process_raw(pcm[start : start + n].tobytes(), full_utt=True)
        decoder.end_utt()
        hyp = decoder.hyp()
        words = hyp.hypstr.strip() if hyp is not None else ""
        text = _spaced(words)
        yield ChunkPublication(i, text, target.encode(text) if text else [], clock() - t0)


def parakeet_ctc_chunks(
    audio: np.ndarray, target: TextCodec, model: Any, processor: Any, chunk_seconds: float = CHUNK_SECONDS,
    clock: Callable[[], float] = time.perf_counter,
) -> Iterator[ChunkPublication]:
    """Greedy CTC per chunk (argmax, repeats merged, blanks dropped by the Parakeet tokenizer).

    Each chunk is encoded on its own, so a chunk's publication depends only on its samples.
    """
    import torch

    n = int(round(chunk_seconds * SAMPLE_RATE))
    dev = next(model.parameters()).device
    t0 = clock()
    for i, start in enumerate(range(0, len(audio), n)):
        inputs = processor(audio[start : start + n], sampling_rate=SAMPLE_RATE, return_tensors="pt")
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
