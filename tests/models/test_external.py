"""PocketSphinx external chunked source: atomic 2.56 s chunks, no invented confidence."""

from __future__ import annotations

import numpy as np
import pytest

from tests.models.test_tokenizer import MERGES, _byte_level
from workbench.models.tokenizer import TextCodec

pytest.importorskip("pocketsphinx")
from workbench.models.external import pocketsphinx_chunks  # noqa: E402


def test_chunks_are_fixed_length_and_carry_no_confidence():
    codec = TextCodec(_byte_level(MERGES))
    audio = (0.01 * np.random.default_rng(0).standard_normal(int(16000 * 6.0))).astype(np.float32)
    pubs = list(pocketsphinx_chunks(audio, codec))
    assert [p.chunk for p in pubs] == [0, 1, 2]  # ceil(6.0 / 2.56)
    assert all(p.confidences is None for p in pubs)
    assert [p.publish_time for p in pubs] == sorted(p.publish_time for p in pubs)
    for p in pubs:
        assert codec.decode(p.tokens) == p.text
