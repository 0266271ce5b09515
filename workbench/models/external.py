"""External chunked source (C.1): PocketSphinx en-US on fixed 2.56 s chunks.

Each chunk's words are published atomically once the chunk is decoded; external sources carry no
confidence (``None``), and none is synthesized. Text goes through Tok_T into the target
vocabulary; a chunk boundary is a word boundary, so every chunk's text is final.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import NamedTuple

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


def pocketsphinx_chunks(
    audio: np.ndarray, target: TextCodec, chunk_seconds: float = CHUNK_SECONDS,
    clock: Callable[[], float] = time.perf_counter,
) -> Iterator[ChunkPublication]:
    """Decode ``audio`` (mono float32 16 kHz) chunk by chunk with PocketSphinx's bundled model."""
    from pocketsphinx import Decoder

    decoder = Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")
    pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype(np.int16)
    n = int(round(chunk_seconds * SAMPLE_RATE))
    t0 = clock()
    for i, start in enumerate(range(0, len(pcm), n)):
        decoder.start_utt()
        decoder.process_raw(pcm[start : start + n].tobytes(), full_utt=True)
        decoder.end_utt()
        hyp = decoder.hyp()
        words = hyp.hypstr.strip() if hyp is not None else ""
        # Whisper-style text: every word carries its leading space
        text = "".join(f" {w}" for w in words.split())
        yield ChunkPublication(i, text, target.encode(text) if text else [], clock() - t0)
