"""Drafters and producers over a decoder session (any model with KV reuse and rollback).

* ``PrefixDrafter`` -- prefix-conditioned drafter (``Drafter`` protocol) for standard SD and
  SpecASR ASP: reuses its own KV across rounds, catches up committed tokens it lacks, reports
  forwards and catch-up, top-1 softmax confidences, ASP ``stop_below``.
* ``AutoregressiveProducer`` -- the target-decoupled producer of Section 4.1: reads only the
  request audio, the instruction and its own history, and yields ``ProducedToken`` s with their
  measured generation time. It never sees target text or target KV.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple, Protocol

import torch

from workbench.decoding.protocols import Proposal


class DecoderSession(Protocol):
    """Retained model state over a token prefix after the fixed (audio + instruction) input."""

    length: int

    def forward(self, ids: Sequence[int]) -> torch.Tensor: ...  # masked fp32 logits [K, V]

    def crop(self, n_remove: int) -> None: ...

    def begin_mask(self) -> torch.Tensor: ...


class ProducedToken(NamedTuple):
    token: int
    confidence: float | None
    t_generated: float  # clock time when the token was available (after its forward)
    # drafter forwards (its prompt prefill included) run by the time this token was available; None: one
    # per token. A cross-vocabulary producer (Tok_T) releases none, one or several tokens per forward, and
    # replay prices its producer per forward (``replay.producer``), so the count travels with the token.
    forwards: int | None = None


def top1(logits: torch.Tensor) -> tuple[int, float]:
    """Greedy token (lowest id on ties) and its softmax probability."""
    tok = int(torch.argmax(logits))
    return tok, float(torch.softmax(logits, dim=-1)[tok])


class PrefixDrafter:
    """Prefix-conditioned greedy drafter with KV reuse across rounds.

    ``prefix`` passed to ``propose`` is the committed prefix after the prompt, known root
    included, in the drafter's vocabulary (SD/ASP require a shared vocabulary).
    """

    def __init__(self, session: DecoderSession, prompt_ids: Sequence[int], eos_id: int | None, max_len: int):
        self.session = session
        self.eos_id = eos_id
        self.max_len = max_len  # decoder positions available (prompt included)
        self.prompt_len = len(prompt_ids)
        self._kv: list[int] = []  # tokens after the prompt held in the session's KV
        self._logits = session.forward(prompt_ids)[-1] + session.begin_mask()
        self.prefill_forwards = 1

    def _sync(self, prefix: Sequence[int]) -> tuple[torch.Tensor, int, int]:
        """Bring the KV to exactly ``prefix``; return (next logits, forwards, catch-up tokens)."""
        common = 0
        for a, b in zip(self._kv, prefix, strict=False):
            if a != b:
                break
            common += 1
        if common == len(prefix) and common == len(self._kv):
            return self._logits, 0, 0
        if common == len(prefix):  # prefix is shorter: re-derive its last logits
            common -= 1
        self.session.crop(len(self._kv) - common)
        self._kv = list(prefix[:common])
        missing = list(prefix[common:])
        forwards = 0
        if len(missing) > 1:  # batched catch-up of committed tokens, then the known root alone
            self.session.forward(missing[:-1])
            forwards += 1
        logits = self.session.forward(missing[-1:])[-1]
        self._kv = list(prefix)
        return logits, forwards + 1, len(missing)

    def propose(self, prefix: Sequence[int], n: int, stop_below: float | None = None) -> Proposal:
        if not prefix:
            raise ValueError("prefix must hold at least the known root")
        n = min(n, self.max_len - self.prompt_len - len(prefix))
        logits, forwards, catchup = self._sync(prefix)
        tokens: list[int] = []
        confs: list[float] = []
        for i in range(max(n, 0)):
            tok, conf = top1(logits)
            tokens.append(tok)
            confs.append(conf)
            if tok == self.eos_id or (stop_below is not None and conf < stop_below) or i == n - 1:
                break
            logits = self.session.forward([tok])[-1]
            self._kv.append(tok)
            forwards += 1
        self._logits = logits
        return Proposal(tuple(tokens), tuple(confs), forwards, catchup)

    def reference_ranks(self, reference: Sequence[int], top: int = 2) -> list[int]:
        """Rank (1 = top-1) of each reference token under the drafter, conditioned on the
        reference prefix before it; ranks above ``top`` are reported as ``top + 1``.

        ``reference[0]`` is the known root from prefill; rank i scores ``reference[i+1]``.
        """
        logits, _, _ = self._sync(reference[:1])
        rows = [logits]
        if len(reference) > 2:
            rows.extend(self.session.forward(reference[1:-1]))
            self._kv = list(reference[:-1])
            self._logits = rows[-1]
        ranks = []
        for row, tok in zip(rows, reference[1:], strict=False):
            higher = int((row > row[tok]).sum()) + int((row[:tok] == row[tok]).sum())  # ties: lower id first
            ranks.append(min(higher + 1, top + 1))
        return ranks


class AutoregressiveProducer:
    """Target-decoupled producer: iterate to get ``ProducedToken`` s as they are generated.

    ``session_factory`` builds the retained state from the request audio and instruction (the
    producer's own prefill, inside the producer's clock). Generation is greedy and stops after
    EOS or ``max_new_tokens``. ``forwards`` counts decoder forwards, prefill included.
    """

    def __init__(
        self,
        session_factory: Callable[[], DecoderSession],
        prompt_ids: Sequence[int],
        eos_id: int | None,
        max_new_tokens: int,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.session_factory = session_factory
        self.prompt_ids = list(prompt_ids)
        self.eos_id = eos_id
        self.max_new_tokens = max_new_tokens
        self.clock = clock
        self.forwards = 0
        self.t_start: float | None = None

    def __iter__(self) -> Iterator[ProducedToken]:
        self.t_start = self.clock()
        session = self.session_factory()
        logits = session.forward(self.prompt_ids)[-1] + session.begin_mask()
        self.forwards = 1
        for i in range(self.max_new_tokens):
            tok, conf = top1(logits)
            yield ProducedToken(tok, conf, self.clock())
            if tok == self.eos_id or i == self.max_new_tokens - 1:
                return
            logits = session.forward([tok])[-1]
            self.forwards += 1


def publication_batches(
    tokens: Iterator[ProducedToken] | Sequence[ProducedToken], size: int = 8
) -> Iterator[tuple[list[ProducedToken], float]]:
    """Group produced tokens into immutable publication batches of ``size`` (the last may be
    shorter); the publish time is the generation time of the batch's last token."""
    batch: list[ProducedToken] = []
    for item in tokens:
        batch.append(item)
        if len(batch) == size:
            yield batch, batch[-1].t_generated
            batch = []
    if batch:
        yield batch, batch[-1].t_generated


def publish_all(tokens: Iterator[ProducedToken], publish: Callable[..., object], size: int = 8) -> None:
    """Drive a producer into a ``PublicationBuffer.publish(tokens, publish_time, confidences)``."""
    for batch, t in publication_batches(tokens, size):
        confs = [p.confidence for p in batch]
        publish([p.token for p in batch], t, None if any(c is None for c in confs) else confs)
