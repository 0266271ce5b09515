"""Generated windows for property tests: references, candidate streams, timings, drafts.

Everything that decides a window's structure -- reference length, stream kind, edits, noise
rates, publication rate and start, batch size, output cap -- is drawn through Hypothesis's own
randomness (``st.randoms``), so a failing window shrinks (shorter references, fewer edits,
earlier publication) instead of being one opaque seed. Per-token bulk -- reference tokens,
timing jitter, confidences, the coin flips of the noisy legacy streams, the saved SD/ASP drafts
-- comes from one drawn integer seed, which keeps generation cheap.

Stream kinds:

* ``early`` / ``early_edits`` -- a noisy copy of the reference published early and fast (ahead of
  the target), so the decoupled schemes are guaranteed proposals; ``early_edits`` adds bursts of
  insertions and deletions, which force rejections and re-anchoring; a quarter of these
  producers stop early, so the buffer drains before the target ends;
* ``noisy``, ``exact``, ``repeated``, ``random``, ``empty`` -- the original population: slow or
  bursty publication, streams that rarely or never align.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from hypothesis import strategies as st

from workbench.decoding import PublicationBuffer, TrajectoryDrafter

VOCAB = 12  # small on purpose: repeated tokens and accidental anchors are common
EOS = 0
PROPOSING = ("early", "early_edits")
LEGACY = ("random", "noisy", "exact", "repeated", "empty")
STREAMS = PROPOSING + LEGACY


@dataclass
class Window:
    reference: list[int]
    max_output: int
    buffer: PublicationBuffer
    drafter: TrajectoryDrafter
    stream_kind: str


def noisy_copy(rng: random.Random, seq: list[int], p_sub: float, p_ins: float, p_del: float) -> list[int]:
    out: list[int] = []
    for t in seq:
        if rng.random() < p_ins:
            out.append(rng.randrange(1, VOCAB))
        if rng.random() < p_del:
            continue
        out.append(rng.randrange(VOCAB) if rng.random() < p_sub else t)
    return out


def sparse_edits(rng: random.Random, seq: list[int]) -> list[int]:
    """A copy with a few single-token edits (at most one per six tokens), counted, not per-token coin
    flips: Hypothesis's randomness favours simple values, and zero edits -- an exact copy -- is the
    simplest, so a failing window shrinks towards fewer edits."""
    out = list(seq)
    for _ in range(rng.randint(0, max(1, len(seq) // 6))):
        at, what = rng.randrange(len(out)), rng.choice("sid")
        if what == "s":
            out[at] = rng.randrange(VOCAB)
        elif what == "i":
            out.insert(at, rng.randrange(1, VOCAB))
        elif len(out) > 1:
            del out[at]
    return out


def with_bursts(rng: random.Random, seq: list[int]) -> list[int]:
    """One to three bursts of 2-4 inserted or deleted tokens (a producer that drifts and recovers)."""
    out = list(seq)
    for _ in range(rng.randint(1, 3)):
        if len(out) < 4:
            break
        at, n = rng.randrange(1, len(out) - 1), rng.randint(2, 4)
        if rng.random() < 0.5:
            out[at:at] = [rng.randrange(1, VOCAB) for _ in range(n)]
        else:
            del out[at : at + n]
    return out


def make_stream(rng: random.Random, bulk: random.Random, greedy: list[int], kind: str) -> list[int]:
    """``rng`` (Hypothesis's) decides the structure; ``bulk`` (a seeded ``Random``) the per-token noise."""
    if kind == "empty":
        return []
    if kind == "random":
        return [bulk.randrange(VOCAB) for _ in range(rng.randrange(1, 2 * len(greedy) + 2))]
    if kind == "exact":
        return list(greedy)
    if kind == "repeated":
        base = [bulk.choice(greedy[:3] or [1]) for _ in range(len(greedy))]
        return noisy_copy(bulk, base, 0.1, 0.1, 0.1)
    if kind in PROPOSING:
        stream = sparse_edits(rng, greedy)
        if kind == "early_edits":
            stream = with_bursts(rng, stream)
        if rng.randrange(4) == 3:  # a producer that stops early (its own cap): the buffer drains
            stream = stream[: rng.randrange(len(stream) // 2, len(stream))]
        return stream
    rates = [rng.random() * 0.4 for _ in range(3)]
    return noisy_copy(bulk, greedy, *rates)


class LazyDrafts(Mapping):
    """Saved drafts after each committed prefix length, generated on first use from one seed."""

    def __init__(self, greedy: list[int], max_output: int, seed: int) -> None:
        self.greedy, self.max_output, self.seed = greedy, max_output, seed
        self._cache: dict[int, tuple[list[int], list[float]]] = {}

    def __getitem__(self, c: int) -> tuple[list[int], list[float]]:
        if not 1 <= c <= self.max_output:
            raise KeyError(c)
        if c not in self._cache:
            rng = random.Random(self.seed * 1_000_003 + c)
            cont = (self.greedy[c:] + [EOS] * 3)[:30]
            draft = noisy_copy(rng, cont, *(rng.random() * 0.5 for _ in range(3)))[:25]
            if rng.random() < 0.1:
                draft = [rng.randrange(VOCAB) for _ in range(rng.randrange(0, 25))]
            self._cache[c] = (draft, [rng.random() ** 0.3 for _ in draft])
        return self._cache[c]

    def __contains__(self, c: object) -> bool:
        return isinstance(c, int) and 1 <= c <= self.max_output

    def __iter__(self) -> Iterator[int]:
        return iter(range(1, self.max_output + 1))

    def __len__(self) -> int:
        return self.max_output


def make_window(rng: random.Random | int, stream_kind: str, draft_seed: int = 0) -> Window:
    if isinstance(rng, int):  # a plain seed (tests that loop over seeds themselves)
        rng, draft_seed = random.Random(rng), rng
    shortest = 8 if stream_kind in PROPOSING else 1  # room for proposals to matter
    n = rng.randrange(shortest, 60)
    bulk = random.Random(draft_seed)
    # Tokens in bulk: a shorter drawn n keeps a prefix of the same reference, so failures still shrink.
    greedy = [bulk.randrange(1, VOCAB) for _ in range(n - 1)] + [EOS]  # EOS only at the end
    if rng.random() < 0.3:  # sometimes the output cap cuts the reference before EOS
        max_output = rng.randrange(shortest, n + 1)
    else:
        max_output = n + rng.randrange(0, 5)
    reference = greedy[:max_output]
    stream = make_stream(rng, bulk, greedy, stream_kind)
    if stream_kind in PROPOSING:  # published early and faster than the target steps
        rate, jitter, t = rng.choice([0.02, 0.1, 0.3]), rng.random() * 0.5, rng.random() * 0.5
    else:
        rate, jitter, t = rng.choice([0.05, 0.5, 1.0, 3.0]), rng.random(), rng.random() * 3
    times = []
    for _ in stream:  # producer time per token, in target-step units
        t += rate * (bulk.random() * 2 * jitter + (1 - jitter))
        times.append(t)
    confs = [bulk.random() ** 0.3 for _ in stream]
    buffer = PublicationBuffer.from_stream(
        stream, times, confs, batch_tokens=rng.choice([1, 3, 8, 12]), vocab_size=VOCAB
    )
    if not stream:
        buffer = PublicationBuffer(vocab_size=VOCAB)
    drafter = TrajectoryDrafter(reference, LazyDrafts(greedy, max_output, draft_seed))
    return Window(reference, max_output, buffer, drafter, stream_kind)


def windows(kinds: tuple[str, ...] = STREAMS) -> st.SearchStrategy[Window]:
    """Windows whose structure shrinks with Hypothesis (``st.randoms`` without true randomness).

    About half the windows come from the proposing kinds, half from the rest.
    """
    groups = [g for g in (tuple(k for k in kinds if k in PROPOSING), tuple(k for k in kinds if k not in PROPOSING))
              if g]
    kind = st.one_of(*(st.sampled_from(g) for g in groups))
    return st.builds(make_window, st.randoms(use_true_random=False), kind, st.integers(0, 2**32 - 1))
