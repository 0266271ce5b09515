"""Complete-audio windows (D.1.2): whole utterances, or consecutive utterances of one recording
packed up to a duration limit, never cut mid-utterance.

The limit is the smaller of the dataset's ``window.max_seconds`` (60 s in the paper's cohorts)
and the target model's audio limit (Whisper's 30 s encoder window). An utterance longer than the
limit is left out rather than truncated: a truncated window would not be the complete audio its
reference transcript describes. How many were left out is logged.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .base import Segment, Utterance, concat

log = logging.getLogger(__name__)

# Audio limits per target family, in seconds (None = the model takes long audio; the dataset's own
# window limit applies). Whisper's encoder sees exactly 30 s; Qwen2-Audio's processor truncates at 30 s.
FAMILY_MAX_SECONDS: dict[str, float | None] = {"whisper": 30.0, "qwen2_audio": 30.0, "qwen3_asr": None,
                                               "qwen2_5_omni": None}
UNSPACED = frozenset({"zh", "ja", "yue"})  # languages written without spaces between words
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class DatasetWindow:
    """One request: fixed audio (one or more spans) plus what the task compares the output with."""

    window_id: str
    dataset: str
    task: str  # asr | translation | qa
    utt_ids: tuple[str, ...]
    segments: tuple[Segment, ...]
    text: str  # what was said (joined transcripts; the passage for QA)
    reference: str  # what quality scores against: transcript, translation or first answer
    language: str
    group: str
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.segments)

    def load(self) -> np.ndarray:
        """Mono float32 16 kHz samples of the whole window."""
        return concat([s.load() for s in self.segments])


def model_max_seconds(model: Mapping[str, Any] | None) -> float | None:
    """The target's audio limit: ``model.max_audio_seconds`` if set, else its family's."""
    if not model:
        return None
    if model.get("max_audio_seconds") is not None:
        return float(model["max_audio_seconds"])
    family = (model.get("target") or {}).get("family")
    return FAMILY_MAX_SECONDS.get(str(family)) if family else None


def effective_max_seconds(window_max: float | None, model: Mapping[str, Any] | None) -> float | None:
    limits = [x for x in (window_max, model_max_seconds(model)) if x is not None]
    return min(limits) if limits else None


def safe_id(dataset: str, first: str, n: int) -> str:
    """A window id usable as a file name, unique within the dataset (windows never share utterances)."""
    base = f"{dataset}-{_UNSAFE.sub('_', first)}"
    return base if n == 1 else f"{base}-n{n}"


def _join(texts: Sequence[str], language: str) -> str:
    return ("" if language in UNSPACED else " ").join(t for t in texts if t)


def _window(dataset: str, task: str, utts: Sequence[Utterance], contiguous: bool) -> DatasetWindow:
    first, last = utts[0], utts[-1]
    if contiguous and len(utts) > 1:
        # one recording with overlapping speakers (AMI): the span from first start to last end, once
        s0 = first.segments[0]
        end = max(u.segments[-1].start + u.segments[-1].seconds for u in utts)
        segments: tuple[Segment, ...] = (Segment(s0.path, end - s0.start, start=s0.start, data=s0.data),)
    else:
        segments = tuple(s for u in utts for s in u.segments)
    meta = dict(first.meta) if len(utts) == 1 else {k: v for k, v in first.meta.items() if k != "end"}
    if contiguous and len(utts) > 1:
        meta["end"] = last.meta.get("end")
    ref = first.reference if len(utts) == 1 and first.reference is not None else _join([u.text for u in utts],
                                                                                          first.language)
    return DatasetWindow(safe_id(dataset, first.utt_id, len(utts)), dataset, task, tuple(u.utt_id for u in utts),
                         segments, _join([u.text for u in utts], first.language), ref, first.language, first.group,
                         meta)


def _span(utts: Sequence[Utterance], contiguous: bool) -> float:
    if not contiguous:
        return sum(u.seconds for u in utts)
    start = utts[0].segments[0].start
    return max(u.segments[-1].start + u.segments[-1].seconds for u in utts) - start


def build_windows(dataset: str, utts: Sequence[Utterance], *, task: str = "asr", mode: str = "pack",
                  max_seconds: float | None = 60.0, min_seconds: float = 0.0,
                  contiguous: bool = False) -> list[DatasetWindow]:
    """Windows over ``utts`` (in loader order).

    ``mode="utterance"``: one window per utterance. ``mode="pack"``: consecutive utterances of one
    ``group`` while the window stays within ``max_seconds``. ``contiguous``: windows are one span of
    the recording (utterances are time-stamped segments of it), not a concatenation.
    """
    if mode not in ("pack", "utterance"):
        raise ValueError(f"dataset.window.mode must be 'pack' or 'utterance', got {mode!r}")
    if contiguous and any(len(u.segments) != 1 or u.segments[0].data is not None for u in utts):
        raise ValueError(f"{dataset}: contiguous windows need one on-disk span per utterance")
    limit = float("inf") if max_seconds is None else float(max_seconds)
    out: list[DatasetWindow] = []
    too_long = 0
    cur: list[Utterance] = []

    def flush() -> None:
        if cur and _span(cur, contiguous) >= min_seconds:
            out.append(_window(dataset, task, cur, contiguous))
        cur.clear()

    for u in utts:
        if u.seconds > limit:
            too_long += 1
            flush()  # a window never skips over an utterance of its recording
            continue
        if mode == "utterance":
            cur.append(u)
            flush()
            continue
        if cur and (u.group != cur[-1].group or _span([*cur, u], contiguous) > limit):
            flush()
        cur.append(u)
    flush()
    if too_long:
        log.warning("%s: %d of %d utterances are longer than %.1f s and were left out (complete-audio windows "
                    "only)", dataset, too_long, len(utts), limit)
    ids = [w.window_id for w in out]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{dataset}: duplicate window ids; utterance ids must be unique within the dataset")
    return out
