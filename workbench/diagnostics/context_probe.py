"""Fig. 3(b) context-sensitivity probe (B.3.2): does the producer need the preceding transcript?

For each block (seconds ``start``..``start+seconds`` of a source), the producer proposes up to
``cap`` tokens twice: *fresh* (the preceding transcript as context) and *stale* (no context). The
supplied context approximates the preceding audio by slicing reference-transcript words in
proportion to duration. The target checks both proposals under the same, fresh context: acceptance
is the consecutive accepted-token count divided by the proposed count (greedy chain verification
accepts exactly the longest prefix equal to the target's own greedy continuation). A row per block;
the paper plots stale minus fresh. This is a supplied-context ablation, not a replay of target text.

Whisper carries context the way it was trained to: ``<|startofprev|>`` + previous text before the
transcription prompt. A cross-vocabulary producer's proposal is converted to the target's
vocabulary through text (Tok_T) before the cap is applied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SAMPLE_RATE = 16000
PAPER_CAP = 32
PAPER_BLOCK = (4.0, 4.0)  # seconds 4-8 of each source
PREV = "<|startofprev|>"


@dataclass(frozen=True)
class Block:
    block_id: str
    dataset: str
    audio: np.ndarray  # the block's samples only
    context: str  # reference words of the preceding audio (proportional slice)


def make_blocks(sources: Sequence[tuple[str, str, np.ndarray, str]], start: float = PAPER_BLOCK[0],
                seconds: float = PAPER_BLOCK[1]) -> list[Block]:
    """Blocks from ``(source_id, dataset, audio, reference text)``; sources shorter than the block end
    are left out (a block is never padded)."""
    out = []
    for sid, dataset, audio, text in sources:
        total = audio.size / SAMPLE_RATE
        if total < start + seconds:
            continue
        words = text.split()
        context = " ".join(words[: int(round(len(words) * start / total))])
        a, b = int(round(start * SAMPLE_RATE)), int(round((start + seconds) * SAMPLE_RATE))
        out.append(Block(sid, dataset, np.ascontiguousarray(audio[a:b], dtype=np.float32), context))
    return out


def prompt_with_context(bundle: Any, context: str) -> list[int]:
    """``<|startofprev|> context`` before the bundle's transcription prompt (no context: the prompt)."""
    if not context.strip():
        return list(bundle.protocol.prompt_ids)
    prev = bundle.codec.token_id(PREV)
    if prev is None:
        raise ValueError(f"{bundle.name}: tokenizer has no {PREV} token; cannot supply a preceding transcript")
    return [prev, *bundle.codec.encode(" " + context.strip()), *bundle.protocol.prompt_ids]


def greedy_continuation(bundle: Any, audio: np.ndarray, prompt: Sequence[int], cap: int) -> list[int]:
    """The model's greedy output after ``prompt`` (EOS excluded), at most ``cap`` tokens."""
    import torch

    from workbench.models.whisper import WhisperDecoderState

    state = WhisperDecoderState(bundle, bundle.features(audio))
    logits = state.forward(list(prompt))[-1] + state.begin_mask()
    out: list[int] = []
    while len(out) < cap:
        tok = int(torch.argmax(logits))
        if tok == bundle.protocol.eos_id:
            break
        out.append(tok)
        logits = state.forward([tok])[-1]
    return out


def to_target(producer: Any, target: Any, ids: Sequence[int]) -> list[int]:
    """A producer proposal in the target's vocabulary (same vocabulary: unchanged)."""
    if producer.codec is None or target.codec is None or producer.codec.vocab_size == target.codec.vocab_size:
        return list(ids)
    return target.codec.encode(producer.codec.decode(list(ids)))


def accepted(proposal: Sequence[int], target_greedy: Sequence[int]) -> int:
    n = 0
    for p, t in zip(proposal, target_greedy, strict=False):
        if p != t:
            break
        n += 1
    return n


def probe(blocks: Sequence[Block], target: Any, producer: Any, cap: int = PAPER_CAP, progress: bool = True) -> Any:
    """One row per block: fresh and stale acceptance, their difference (stale - fresh), counts."""
    import polars as pl
    from tqdm.auto import tqdm

    rows = []
    for b in tqdm(blocks, desc="context probe", unit="block", disable=not progress):
        fresh_prompt = prompt_with_context(target, b.context)
        reference = greedy_continuation(target, b.audio, fresh_prompt, cap)
        row: dict[str, Any] = {"block_id": b.block_id, "dataset": b.dataset, "context_words": len(b.context.split()),
                               "target_tokens": len(reference)}
        for cond, ctx in (("fresh", b.context), ("stale", "")):
            raw = greedy_continuation(producer, b.audio, prompt_with_context(producer, ctx), cap)
            prop = to_target(producer, target, raw)[:cap]
            row[f"{cond}_proposed"] = len(prop)
            row[f"{cond}_accepted"] = accepted(prop, reference)
            row[f"{cond}_acceptance"] = row[f"{cond}_accepted"] / len(prop) if prop else None
        if row["fresh_acceptance"] is not None and row["stale_acceptance"] is not None:
            row["difference"] = row["stale_acceptance"] - row["fresh_acceptance"]
        else:
            row["difference"] = None
        rows.append(row)
    return pl.DataFrame(rows)


def summary(frame: Any, threshold: float = 0.05) -> dict[str, float]:
    """The paper's B.3.2 numbers: median difference, share unchanged, shares moved by > threshold."""
    d = frame["difference"].drop_nulls()
    n = len(d)
    if n == 0:
        raise ValueError("no block has nonempty proposals in both conditions")
    return {"blocks": float(n), "median_difference": float(d.median()),
            "unchanged_share": float((d == 0).sum() / n), "both_zero_share": float(
                ((frame["fresh_accepted"] == 0) & (frame["stale_accepted"] == 0)).sum() / frame.height),
            "reduced_share": float((d < -threshold).sum() / n), "increased_share": float((d > threshold).sum() / n)}
