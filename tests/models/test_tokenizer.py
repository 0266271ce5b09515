"""Tokenizer repair and validation on a small byte-level BPE built in code."""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from workbench.models.tokenizer import TextCodec, load_tokenizer_json, repair_tokenizer_json, validate_tokenizer

# ordered like a real GPT-2 merge list: every merge's parts are earlier merges or bytes
MERGES = ["Ġ t", "Ġ a", "Ġ h", "h e", "Ġt he", "Ġt h", "a t", "Ġth at", "n d", "Ġa nd", "Ġt o", "i s",
          "Ġth is", "r e", "Ġthe re", "Ġh e"]


def _byte_level(merges: list[str]) -> Tokenizer:
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {c: i for i, c in enumerate(sorted(alphabet))}
    for m in MERGES:
        vocab.setdefault(m.replace(" ", ""), len(vocab))
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    return tok


def test_complete_tokenizer_validates_and_round_trips():
    tok = _byte_level(MERGES)
    validate_tokenizer(tok)
    codec = TextCodec(tok)
    text = " the cat, there and this 東京!"
    assert codec.decode(codec.encode(text)) == text
    assert codec.encode(" the") == [tok.token_to_id("Ġthe")]


def test_missing_first_merge_is_detected_then_repaired(tmp_path):
    broken = _byte_level(MERGES[1:])
    # round-trip alone still passes: that is why canonical encodings are checked too
    ids = broken.encode(" the").ids
    assert broken.decode(ids) == " the" and len(ids) > 1
    with pytest.raises(ValueError, match="single token"):
        validate_tokenizer(broken)
    path = tmp_path / "tokenizer.json"
    path.write_text(broken.to_str())
    tok, restored = load_tokenizer_json(path)
    assert restored == ["Ġ t"]
    assert tok.encode(" the").ids == [tok.token_to_id("Ġthe")]


def test_repair_is_a_no_op_on_complete_files():
    data = json.loads(_byte_level(MERGES).to_str())
    before = json.dumps(data["model"]["merges"])
    data, restored = repair_tokenizer_json(data)
    assert restored == [] and json.dumps(data["model"]["merges"]) == before
