"""B.1's acceptance distribution with chunk (CTC) proposers: text proposals without any transcript.

B.1 measures strict prefix acceptance of a Parakeet 110M CTC proposer against a Qwen3-ASR 1.7B
target (K = 32, 28,595 blocks): the proposer reads only the audio block -- it has no notion of a
preceding transcript -- and its text, through the target's tokenizer (Tok_T), is checked against the
target's greedy continuation of the same block. The proposers here are the workbench's external
chunk sources (``models.external``): PocketSphinx en-US (offline, bundled model) and a transformers
``ParakeetForCTC`` (``nvidia/parakeet-ctc-0.6b`` or any release of that class), each decoding the
block in its own 2.56 s chunks exactly as it publishes during a run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .context_probe import PAPER_CAP, Block, accepted, greedy_continuation, prompt_with_context

Proposer = Callable[[np.ndarray], str]  # audio block -> proposed text (leading spaces, Whisper style)


def pocketsphinx_proposer(target_codec: Any) -> Proposer:
    from workbench.models.external import pocketsphinx_chunks

    return lambda audio: "".join(p.text for p in pocketsphinx_chunks(audio, target_codec))


def parakeet_proposer(target_codec: Any, spec: dict[str, Any]) -> Proposer:
    """A ``ParakeetForCTC`` release named by a model block (``name``, ``family: parakeet_ctc``, weights)."""
    from workbench.models.external import parakeet_ctc_chunks
    from workbench.models.registry import ModelSpec, load_ctc_spec

    bundle = load_ctc_spec(ModelSpec.from_dict(spec))
    seconds = float(spec.get("chunk_seconds", 2.56))
    return lambda audio: "".join(p.text for p in parakeet_ctc_chunks(audio, target_codec, bundle.model,
                                                                     bundle.processor, seconds))


def ctc_probe(blocks: Sequence[Block], target: Any, proposers: dict[str, Proposer], cap: int = PAPER_CAP,
              progress: bool = True) -> Any:
    """One row per (block, proposer): proposal length, accepted prefix, acceptance = accepted / proposed
    (None for an empty proposal), against the target's greedy continuation under the block's context."""
    import polars as pl
    from tqdm.auto import tqdm

    rows = []
    for b in tqdm(blocks, desc="CTC probe", unit="block", disable=not progress):
        reference = greedy_continuation(target, b.audio, prompt_with_context(target, b.context), cap)
        for name, propose in proposers.items():
            text = propose(b.audio)
            prop = target.codec.encode(text)[:cap] if text.strip() else []
            n_acc = accepted(prop, reference)
            rows.append({"block_id": b.block_id, "dataset": b.dataset, "proposer": name,
                         "target_tokens": len(reference), "proposal_text": text, "proposed": len(prop),
                         "accepted": n_acc, "acceptance": n_acc / len(prop) if prop else None})
    return pl.DataFrame(rows, schema_overrides={"acceptance": pl.Float64})


__all__ = ["Proposer", "ctc_probe", "parakeet_proposer", "pocketsphinx_proposer"]
