"""Tok_T: convert a drafter's tokens into the target vocabulary through text (Section 4.1).

Published target tokens must never be revised, so only *final* text is converted: the text up to
the start of the last word, which a later drafter token may still extend. Byte-level BPE
pre-tokenizes at a space before a word, so the target encoding of final text is always a prefix
of the target encoding of any continuation. ``finish()`` flushes the held-back word at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from workbench.models.drafting import ProducedToken
from workbench.models.tokenizer import TextCodec


class VocabularyConverter:
    """Incremental drafter-ids -> target-ids conversion with a held-back partial word."""

    def __init__(self, source: TextCodec, target: TextCodec, source_eos: int | None = None,
                 target_eos: int | None = None):
        self.source, self.target = source, target
        self.source_eos, self.target_eos = source_eos, target_eos
        self._src: list[int] = []
        self._out: list[int] = []
        self.finished = False

    def _final_text(self, final: bool) -> str:
        text = self.source.decode(self._src)
        if final:
            return text
        cut = text.rfind(" ")
        return text[:cut] if cut > 0 else ""

    def _emit(self, final: bool) -> list[int]:
        ids = self.target.encode(self._final_text(final)) if self._src else []
        if ids[: len(self._out)] != self._out:
            # cannot happen for byte-level BPE at word boundaries; refuse rather than revise
            raise RuntimeError(f"Tok_T would revise published tokens: {self._out} vs {ids}")
        new = ids[len(self._out) :]
        self._out.extend(new)
        return new

    def feed(self, source_tokens: Sequence[int]) -> list[int]:
        """Add drafter tokens; return the target tokens that became final."""
        if self.finished:
            raise RuntimeError("feed() after finish()")
        eos = self.source_eos is not None and self.source_eos in source_tokens
        if eos:
            source_tokens = list(source_tokens)[: list(source_tokens).index(self.source_eos)]
        self._src.extend(source_tokens)
        return self.finish() if eos else self._emit(final=False)

    def finish(self) -> list[int]:
        """The drafter is done (EOS or cap): flush the held-back word, then target EOS if known."""
        if self.finished:
            return []
        new = self._emit(final=True)
        self.finished = True
        if self.target_eos is not None:
            new.append(self.target_eos)
            self._out.append(self.target_eos)
        return new

    def convert(self, source_tokens: Sequence[int]) -> list[int]:
        """Whole-sequence conversion (reference for the incremental path)."""
        text = self.source.decode([t for t in source_tokens if t != self.source_eos])
        return self.target.encode(text)


def convert_stream(produced: Iterable[ProducedToken], converter: VocabularyConverter,
                   stop: Callable[[], bool] | None = None) -> Iterator[ProducedToken]:
    """Wrap a producer so it yields target-vocabulary tokens. Conversion cost belongs to the
    source (C.1): each target token's time is taken after its conversion. Converted tokens carry
    no confidence (a drafter probability does not transfer across vocabularies).

    ``stop``: checked after every drafter token, so a stop request ends the stream at the next
    forward boundary (the drain rule, A.3) even while a held-back word yields nothing: a drafter
    looping inside one "word" (no space, e.g. repeated punctuation) would otherwise run on to its
    cap unseen by the caller. A stopped stream flushes nothing: the window is over.

    Each converted token carries ``forwards``: the drafter tokens consumed by then (one forward each,
    the prompt prefill's included), so replay can price the producer per forward."""
    import time

    n = 0
    for p in produced:
        n += 1
        for tok in converter.feed([p.token]):
            yield ProducedToken(tok, None, time.perf_counter(), n)
        if converter.finished:
            return
        if stop is not None and stop():
            return
    for tok in converter.finish():
        yield ProducedToken(tok, None, time.perf_counter(), n)
