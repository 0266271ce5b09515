"""One validation pass over a corpus before any model work: a bad file costs only itself.

Every utterance's audio is checked once, with a progress bar: it decodes, its rate is at least the
16 kHz the models read (upsampling a lower rate invents the band the models were trained on), it
has at most two channels, it holds samples, none is NaN/Inf, it is not all silence; and the
utterance has a transcript. ``dataset.on_bad_audio`` then decides:

* ``error`` -- stop before any model loads with one ``AudioError`` listing every bad file with its
  reason (the first :data:`LISTED`, then a count);
* ``skip`` -- go on without them, say so in one line, and keep the list (:func:`skipped`) for the
  run to log as an artifact, with the count as a metric.

Results are cached per file identity (path, size, mtime, inode) within the process, so the check
made while validating a config and the one made while loading windows decode each file once.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workbench.data.audio import SAMPLE_RATE
from workbench.errors import AudioError, ConfigError

log = logging.getLogger(__name__)
POLICIES = ("error", "skip")
LISTED = 20  # bad files named in the error line; the rest are counted
MAX_CHANNELS = 2  # speech corpora are mono or stereo; more is not a recording of one talker


@dataclass(frozen=True)
class BadFile:
    """One file (or utterance) the run cannot use, and why."""

    utterance: str
    source: str
    reason: str

    def line(self) -> str:
        return f"{self.source} ({self.reason})"


_CHECKED: dict[tuple, str | None] = {}  # file identity -> reason (None: good)
_SKIPPED: dict[str, list[BadFile]] = {}  # dataset root -> the files a skip run went on without


def policy(ds: Mapping[str, Any]) -> str:
    value = ds.get("on_bad_audio", "error")
    if value not in POLICIES:
        raise ConfigError("dataset.on_bad_audio", f"must be one of {', '.join(POLICIES)}, got {value!r}")
    return str(value)


def _identity(path: Path) -> tuple:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)


def _samples_problem(data: np.ndarray, rate: int, channels: int) -> str | None:
    if rate < SAMPLE_RATE:
        layout = "stereo" if channels == 2 else f"{channels}-channel" if channels > 1 else "mono"
        return (f"{layout} at {rate} Hz, below the {SAMPLE_RATE} Hz the models read (upsampling invents the band); "
                f"use the original {SAMPLE_RATE} Hz recording")
    if channels > MAX_CHANNELS:
        return f"{channels} channels; export mono"
    if data.size == 0:
        return "contains no samples"
    bad = int((~np.isfinite(data)).sum())
    if bad:
        return f"{bad} samples are NaN or infinite (corrupt); re-export it"
    if not np.abs(data).max() > 0.0:
        return "all samples are zero (silence)"
    return None


def check_audio(source: Any) -> str | None:
    """Why this audio (a path or encoded bytes) cannot be used, or ``None`` when it can."""
    import soundfile as sf

    if isinstance(source, Path):
        if source.is_dir():
            return "is a directory, not an audio file"
        if not source.is_file():
            return "does not exist"
    try:
        with sf.SoundFile(io.BytesIO(source) if isinstance(source, bytes) else str(source)) as f:
            rate, channels = f.samplerate, f.channels
            data = f.read(dtype="float32", always_2d=True)
    except Exception as e:  # soundfile raises several types for undecodable input
        return f"cannot be decoded ({type(e).__name__}: {str(e)[:120]}); convert it to WAV or FLAC"
    return _samples_problem(data, rate, channels)


def _check_path(path: Path) -> str | None:
    try:
        key = _identity(path)
    except OSError:
        return check_audio(path)
    if key not in _CHECKED:
        _CHECKED[key] = check_audio(path)
    return _CHECKED[key]


def bad_files(utterances: Sequence[Any], desc: str = "checking audio") -> list[BadFile]:
    """Every unusable file or utterance of the corpus, in corpus order (one pass, a progress bar)."""
    from tqdm.auto import tqdm

    out: list[BadFile] = []
    for u in tqdm(utterances, desc=desc, unit="utt", disable=len(utterances) < 50):
        if not str(u.text or "").strip():
            where = next((str(s.path) for s in u.segments if s.path is not None), u.utt_id)
            out.append(BadFile(u.utt_id, where, "no transcript"))
            continue
        for seg in u.segments:
            if seg.data is not None:
                reason, where = check_audio(seg.data), f"{seg.path or '<hf audio>'} ({u.utt_id})"
            else:
                reason, where = _check_path(Path(seg.path)), str(seg.path)
            if reason is not None:
                out.append(BadFile(u.utt_id, where, reason))
                break
    return out


def screen(utterances: Sequence[Any], ds: Mapping[str, Any]) -> list[Any]:
    """The utterances the run may use, by ``dataset.on_bad_audio`` (module docstring)."""
    how = policy(ds)
    root = str(ds.get("root"))
    bad = bad_files(utterances, desc=f"checking {ds.get('name', 'dataset')} audio")
    if not bad:
        _SKIPPED.pop(root, None)
        return list(utterances)
    if how == "error":
        listed = "; ".join(b.line() for b in bad[:LISTED])
        more = f"; and {len(bad) - LISTED} more" if len(bad) > LISTED else ""
        raise AudioError(f"{len(bad)} of {len(utterances)} files cannot be used: {listed}{more}",
                         where=f"dataset.root={root}",
                         fix="repair or remove them, or run without them with dataset.on_bad_audio=skip")
    if _SKIPPED.get(root) != bad:
        log.warning("dataset.root=%s: skipping %d bad file(s) of %d (dataset.on_bad_audio=skip); the list is the "
                    "run's bad_audio.json artifact", root, len(bad), len(utterances))
    _SKIPPED[root] = bad
    drop = {b.utterance for b in bad}
    return [u for u in utterances if u.utt_id not in drop]


def skipped(ds: Mapping[str, Any]) -> list[dict[str, str]]:
    """The files a ``skip`` run went on without (each part of a combined dataset too), as records."""
    from workbench.data.datasets.parts import COMBINED, part_configs

    parts = part_configs(ds) if ds.get("loader") == COMBINED else [ds]
    return [asdict(b) for p in parts for b in _SKIPPED.get(str(p.get("root")), [])]


def forget() -> None:
    """Drop the in-process cache (a test that edits files in place within one mtime tick)."""
    _CHECKED.clear()
    _SKIPPED.clear()


__all__ = ["LISTED", "POLICIES", "BadFile", "bad_files", "check_audio", "forget", "policy", "screen", "skipped"]
