"""SYNTHETIC trajectories for tests and benchmarks -- not model outputs, never paper results.

Every window built here has ``synthetic=True`` and a ``syn-`` id. The generator controls the
quantities replay is sensitive to:

* **length** -- reference tokens per window (EOS last), mean ~137 like the paper's cohort
  (94,511 tokens / 688 windows, D.4.1);
* **acceptance** -- per-token agreement of producer and drafter with the reference;
* **noise** -- insertion / deletion / substitution in producer streams (what alignment repairs);
* **burstiness** -- hard stretches (a two-state Markov chain) where agreement collapses, shared
  by the drafter and every source of the window, as for a hard audio segment.

Tokens follow a Zipf law so repeated tokens (commas, spaces) exist and can mis-anchor alignment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .trajectory import DraftTable, SourceTrack, Window

DRAFT_CAP = 24  # ASP's maximum of 24 draft tokens (D.1.3) bounds every saved draft


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """A synthetic candidate source. ``chunk_tokens=None`` means autoregressive (1 token per op)."""

    name: str
    acceptance: float = 0.9  # P(copy the reference token) outside hard stretches
    p_insert: float = 0.02
    p_delete: float = 0.02
    chunk_tokens: float | None = None  # mean tokens per chunk operation for chunk sources
    confidence: bool = True
    eligible: float = 1.0  # probability the window's language is supported


@dataclass(frozen=True, slots=True)
class SyntheticSpec:
    n_windows: int = 8
    mean_tokens: float = 137.0
    sd_tokens: float = 60.0
    min_tokens: int = 8
    max_output: int = 1024
    vocab_size: int = 4096
    eos_id: int = 0
    zipf: float = 1.0  # rank exponent of the finite token law: the top token is ~11% of text
    drafter_acceptance: float = 0.85
    hard_enter: float = 0.01  # P(enter a hard stretch) per token: burstiness
    hard_mean: float = 6.0  # mean hard-stretch length in tokens
    hard_acceptance: float = 0.2  # agreement inside a hard stretch
    datasets: tuple[str, ...] = ("libri", "ami", "fleurs", "kespeech", "m4singer")
    sources: tuple[SourceSpec, ...] = field(default_factory=lambda: (SourceSpec("qwen"),))
    seed: int = 0


def paper_like_sources() -> tuple[SourceSpec, ...]:
    """Qwen (autoregressive, confident) plus two chunked external sources without confidence."""
    return (
        SourceSpec("qwen", acceptance=0.95, p_insert=0.005, p_delete=0.005),
        SourceSpec("parakeet", acceptance=0.88, p_insert=0.02, p_delete=0.02, chunk_tokens=7.0,
                   confidence=False, eligible=0.8),
        SourceSpec("sensevoice", acceptance=0.9, p_insert=0.015, p_delete=0.015, chunk_tokens=7.0,
                   confidence=False, eligible=0.9),
    )


def _tokens(rng: np.random.Generator, spec: SyntheticSpec, size: int) -> np.ndarray:
    """Zipf-distributed non-EOS tokens: rank r has probability proportional to r**-zipf."""
    ranks = np.arange(1, spec.vocab_size)
    cdf = np.cumsum(ranks ** -spec.zipf)
    r = np.searchsorted(cdf, rng.random(size) * cdf[-1])
    return (r + 1 + spec.eos_id) % spec.vocab_size  # rank 0 -> eos_id + 1, ..., never eos_id


def _reference(rng: np.random.Generator, spec: SyntheticSpec) -> np.ndarray:
    n = int(np.clip(round(rng.normal(spec.mean_tokens, spec.sd_tokens)), spec.min_tokens, spec.max_output))
    return np.append(_tokens(rng, spec, n - 1), spec.eos_id).astype(np.int64)


def _hard_mask(rng: np.random.Generator, n: int, spec: SyntheticSpec) -> np.ndarray:
    hard = np.zeros(n, dtype=bool)
    i = 0
    while i < n:
        if rng.random() < spec.hard_enter:
            run = 1 + rng.geometric(1.0 / spec.hard_mean)
            hard[i : i + run] = True
            i += run
        i += 1
    return hard


def _wrong(rng: np.random.Generator, true: np.ndarray, vocab: int, eos: int) -> np.ndarray:
    """A token that is surely not ``true`` and not EOS (a miss, not an early stop)."""
    out = (true + rng.integers(1, vocab - 1, size=true.shape)) % vocab
    return np.where(out == eos, (out + 1) % vocab, np.where(out == true, (out + 2) % vocab, out))


def _confidence(rng: np.random.Generator, correct: np.ndarray) -> np.ndarray:
    return np.where(correct, rng.beta(6.0, 1.5, correct.shape), rng.beta(1.5, 3.0, correct.shape))


def _drafts(rng: np.random.Generator, ref: np.ndarray, hard: np.ndarray, spec: SyntheticSpec) -> DraftTable:
    n = len(ref)
    pad = _tokens(rng, spec, DRAFT_CAP)
    ext = np.concatenate([ref, pad])
    hard_ext = np.concatenate([hard, np.zeros(DRAFT_CAP, dtype=bool)])
    idx = np.arange(1, n)[:, None] + np.arange(DRAFT_CAP)[None, :]
    p = np.where(hard_ext[idx], spec.hard_acceptance, spec.drafter_acceptance)
    correct = rng.random(idx.shape) < p
    toks = np.where(correct, ext[idx], _wrong(rng, ext[idx], spec.vocab_size, spec.eos_id))
    return DraftTable(toks, _confidence(rng, correct), np.full(n - 1, DRAFT_CAP, dtype=np.int64))


def _stream(rng: np.random.Generator, ref: np.ndarray, hard: np.ndarray, s: SourceSpec,
            spec: SyntheticSpec) -> tuple[np.ndarray, np.ndarray]:
    """Producer stream: the reference through substitution / deletion / insertion noise.

    Position ``i`` emits (unless deleted) the reference token or a substitute, then (with
    probability ``p_insert``) one extra token. EOS is always kept, so the stream ends with it.
    """
    n = len(ref)
    last = np.arange(n) == n - 1
    keep = (rng.random(n) >= s.p_delete) | last
    good = (rng.random(n) < np.where(hard, spec.hard_acceptance, s.acceptance)) | last
    main = np.where(good, ref, _wrong(rng, ref, spec.vocab_size, spec.eos_id))
    insert = (rng.random(n) < s.p_insert) & ~last
    pairs = np.stack([main, _tokens(rng, spec, n)], axis=1).ravel()
    ok = np.stack([good, np.zeros(n, dtype=bool)], axis=1).ravel()
    mask = np.stack([keep, insert], axis=1).ravel()
    # source generation stops at EOS or 2,048 tokens (D.5.1)
    return pairs[mask][:2048], ok[mask][:2048]


def _ops(rng: np.random.Generator, n: int, s: SourceSpec) -> tuple[int, ...]:
    if s.chunk_tokens is None:
        return (1,) * n
    ops: list[int] = []
    left = n
    while left > 0:
        k = min(left, 1 + int(rng.poisson(s.chunk_tokens - 1)))
        ops.append(k)
        left -= k
    return tuple(ops)


def synthetic_window(index: int, spec: SyntheticSpec) -> Window:
    rng = np.random.default_rng([spec.seed, index])
    ref = _reference(rng, spec)
    hard = _hard_mask(rng, len(ref), spec)
    tracks = {}
    for s in spec.sources:
        toks, ok = _stream(rng, ref, hard, s, spec)
        conf = _confidence(rng, ok).tolist() if s.confidence else None
        tracks[s.name] = SourceTrack(
            source=s.name, tokens=tuple(toks.tolist()), confidences=None if conf is None else tuple(conf),
            op_tokens=_ops(rng, len(toks), s), eligible=bool(rng.random() < s.eligible),
        )
    return Window(
        window_id=f"syn-{spec.seed}-{index:05d}",
        dataset=spec.datasets[index % len(spec.datasets)],
        reference=tuple(ref.tolist()),
        eos_id=spec.eos_id,
        vocab_size=spec.vocab_size,
        max_output=spec.max_output,
        drafts=_drafts(rng, ref, hard, spec),
        sources=tracks,
        synthetic=True,
    ).validate("<synthetic>")


def synthetic_windows(spec: SyntheticSpec, indices: Sequence[int] | None = None) -> list[Window]:
    """``spec.n_windows`` SYNTHETIC windows (deterministic in ``spec.seed`` and the index)."""
    return [synthetic_window(i, spec) for i in (indices if indices is not None else range(spec.n_windows))]
