"""Generated windows for property tests: references, candidate streams, timings, drafts."""

from __future__ import annotations

import random
from dataclasses import dataclass

from workbench.decoding import PublicationBuffer, TrajectoryDrafter

VOCAB = 12  # small on purpose: repeated tokens and accidental anchors are common
EOS = 0


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


def make_stream(rng: random.Random, greedy: list[int], kind: str) -> list[int]:
    if kind == "empty":
        return []
    if kind == "random":
        return [rng.randrange(VOCAB) for _ in range(rng.randrange(1, 2 * len(greedy) + 2))]
    if kind == "exact":
        return list(greedy)
    if kind == "repeated":
        base = [rng.choice(greedy[:3] or [1]) for _ in range(len(greedy))]
        return noisy_copy(rng, base, 0.1, 0.1, 0.1)
    rates = [rng.random() * 0.4 for _ in range(3)]
    return noisy_copy(rng, greedy, *rates)


def make_window(seed: int, stream_kind: str) -> Window:
    rng = random.Random(seed)
    n = rng.randrange(1, 60)
    greedy = [rng.randrange(1, VOCAB) for _ in range(n - 1)] + [EOS]  # EOS only at the end
    if rng.random() < 0.3:  # sometimes the output cap cuts the reference before EOS
        max_output = rng.randrange(1, n + 1)
    else:
        max_output = n + rng.randrange(0, 5)
    reference = greedy[:max_output]
    stream = make_stream(rng, greedy, stream_kind)
    rate = rng.choice([0.05, 0.5, 1.0, 3.0])  # producer time per token, in target-step units
    jitter = rng.random()
    times, t = [], rng.random() * 3
    for _ in stream:
        t += rate * (rng.random() * 2 * jitter + (1 - jitter))
        times.append(t)
    confs = [rng.random() ** 0.3 for _ in stream]
    buffer = PublicationBuffer.from_stream(
        stream, times, confs, batch_tokens=rng.choice([1, 3, 8, 12]), vocab_size=VOCAB
    )
    if not stream:
        buffer = PublicationBuffer(vocab_size=VOCAB)
    drafts = {}
    for c in range(1, max_output + 1):
        cont = greedy[c:] + [EOS] * 3
        draft = noisy_copy(rng, cont, *(rng.random() * 0.5 for _ in range(3)))[:25]
        if rng.random() < 0.1:
            draft = [rng.randrange(VOCAB) for _ in range(rng.randrange(0, 25))]
        drafts[c] = (draft, [rng.random() ** 0.3 for _ in draft])
    return Window(reference, max_output, buffer, TrajectoryDrafter(reference, drafts), stream_kind)
