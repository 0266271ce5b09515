"""Host windows: consecutive demo clips packed into longer audio windows.

The demo clips are 1-8 s (3-28 words), far shorter than the paper's ~137-token windows, and a
short window is dominated by startup and drain. Packing consecutive clips (corpus order, a short
silence between them) up to ``max_seconds`` (< Whisper's 30 s input) gives windows of a few dozen
to ~100 target tokens. Calibration and evaluation windows come from disjoint clips: the corpus's
own stratified dev/test ``split``. Clips load under the target's own audio limit (``audio_limit``:
Whisper 30 s, Qwen3-ASR/Omni long audio), and a packed window never exceeds it.

The benchmark's windows are the bench corpus's (``bench_windows``, ``workbench.data.bench_corpus``):
every window carries its ``split``, and every selection (calibration, width caps, kernel crossovers,
rule constants, producer and budget choice) passes its windows through ``dev_only``, which refuses a
test window -- the native counterpart of replay's ``DevSplit``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from workbench.data.audio import WHISPER_MAX_SECONDS, load_audio
from workbench.data.corpus import Clip, Corpus, build_demo_corpus, split
from workbench.data.datasets.windows import model_max_seconds
from workbench.errors import DataError

SAMPLE_RATE = 16000


@dataclass(frozen=True)
class AudioWindow:
    window_id: str
    clip_ids: tuple[str, ...]
    audio: np.ndarray
    # the request's instruction (translation target, QA question; the cohort manifest's), which the
    # target, the serial drafter and the producer are all prompted with; None: the pair's own prompt
    instruction: str | None = None
    # "dev" or "test" (the bench corpus's speaker split; the demo's calibration / evaluation windows);
    # None: ad-hoc audio, which no selection may use either (``dev_only``)
    split: str | None = None

    @property
    def seconds(self) -> float:
        return len(self.audio) / SAMPLE_RATE


def pack_windows(corpus: Corpus, clips: Sequence[Clip], max_seconds: float = 25.0, gap_s: float = 0.3,
                 prefix: str = "w", audio_limit: float | None = WHISPER_MAX_SECONDS,
                 split: str | None = None) -> list[AudioWindow]:
    """Greedily pack consecutive clips (given order) into windows of at most ``max_seconds``.

    ``audio_limit``: the target's own limit (``model_max_seconds``; None: long audio). A clip over it
    is one clear error (``load_audio``); windows are packed to the smaller of the two limits."""
    if audio_limit is not None:
        max_seconds = min(max_seconds, audio_limit)
    gap = np.zeros(int(gap_s * SAMPLE_RATE), dtype=np.float32)
    out: list[AudioWindow] = []
    parts: list[np.ndarray] = []
    ids: list[str] = []

    def flush() -> None:
        if ids:
            audio = np.concatenate([x for p in parts for x in (p, gap)][:-1]).astype(np.float32)
            out.append(AudioWindow(f"{prefix}{len(out):02d}", tuple(ids), audio, split=split))
            parts.clear()
            ids.clear()

    for clip in clips:
        audio = load_audio(clip.path, max_seconds=audio_limit)
        total = sum(len(p) + len(gap) for p in parts) + len(audio)
        if ids and total > max_seconds * SAMPLE_RATE:
            flush()
        parts.append(audio)
        ids.append(clip.window_id)
    flush()
    return out


def demo_windows(max_seconds: float = 25.0, dev_fraction: float = 0.25, seed: int = 0,
                 corpus: Corpus | None = None,
                 model: Mapping[str, Any] | None = None) -> tuple[list[AudioWindow], list[AudioWindow]]:
    """(calibration windows, evaluation windows) from the demo corpus's dev/test split.

    ``model``: the ``conf/model`` mapping whose target limit applies (default: Whisper's 30 s)."""
    corpus = corpus or build_demo_corpus()
    limit = model_max_seconds(model) if model is not None else WHISPER_MAX_SECONDS
    dev, test = split(corpus, dev_fraction, seed)
    return (pack_windows(corpus, dev, max_seconds, prefix="calib", audio_limit=limit, split="dev"),
            pack_windows(corpus, test, max_seconds, prefix="eval", audio_limit=limit, split="test"))


def demo_clip_windows(n: int | None, dev_fraction: float = 0.25, seed: int = 0, corpus: Corpus | None = None,
                      model: Mapping[str, Any] | None = None) -> list[AudioWindow]:
    """The first ``n`` clips (``None``: all) of the demo corpus's dev split, one window each
    (``split="dev"``): the short windows whose As²d calls the host calibration also measures
    (``calibrate_host(clips=...)``), and the drift probes' duration-matched windows (``probe_choice.py``)."""
    corpus = corpus or build_demo_corpus()
    limit = model_max_seconds(model) if model is not None else WHISPER_MAX_SECONDS
    dev, _ = split(corpus, dev_fraction, seed)
    return [AudioWindow(c.window_id, (c.window_id,), load_audio(c.path, max_seconds=limit), split="dev")
            for c in dev[:n]]


def calibration_clip_ids(dev_fraction: float = 0.25, seed: int = 0, corpus: Corpus | None = None) -> frozenset[str]:
    """Every demo clip a host calibration may measure (the dev split of ``demo_windows`` and
    ``demo_clip_windows``): a D.3 check leaves these out of the windows it judges."""
    corpus = corpus or build_demo_corpus()
    return frozenset(c.window_id for c in split(corpus, dev_fraction, seed)[0])


def bench_windows(split: str = "test", dataset: Mapping[str, Any] | None = None,
                  max_windows: int | None = None) -> list[AudioWindow]:
    """The bench corpus's windows of one ``split`` (``conf/dataset/bench*.yaml`` mapping; default: the
    full corpus), at most ``max_windows`` of them, taken round-robin over speakers."""
    from workbench.data.bench_corpus import bench_from_config

    corpus = bench_from_config(dict(dataset or {}))
    chosen = corpus.split(split)
    if max_windows is not None and max_windows < len(chosen):
        by_speaker: dict[str, list[Any]] = {}
        for w in chosen:
            by_speaker.setdefault(w.speaker, []).append(w)
        queues, keep = list(by_speaker.values()), cast("list[Any]", [])
        while len(keep) < max_windows:
            for q in queues:
                if q and len(keep) < max_windows:
                    keep.append(q.pop(0).window_id)
        chosen = [w for w in chosen if w.window_id in keep]
    return [AudioWindow(w.window_id, (w.window_id,), corpus.load_audio(w), split=w.split) for w in chosen]


def dev_only(windows: Sequence[AudioWindow], job: str) -> Sequence[AudioWindow]:
    """``windows`` if every one is a dev window; else one ``DataError`` naming the job and a test window.

    Tune on dev, report test: a selection that saw a test window would make the test figure a fit."""
    bad = [w.window_id for w in windows if w.split != "dev"]
    if bad:
        raise DataError(f"{job} was given {len(bad)} window(s) outside the dev split (first: {bad[0]!r}); "
                        "selection sees dev windows only", where=job,
                        fix="pass dev windows (bench_windows('dev') or the demo's calibration windows)")
    return windows
