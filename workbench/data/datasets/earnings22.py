"""Earnings-22 (Del Rio et al., 2022), for the B.1 per-corpus acceptance probes.

Two layouts:

* the release (github.com/revdotcom/speech-datasets, ``earnings22/``): ``media/<file_id>.mp3`` and
  ``transcripts/nlp_references/<file_id>.nlp`` (a header, then ``token|speaker|ts|endTs|punctuation|
  case|tags`` rows). A call is one utterance: its whole audio (tens of minutes), which only a
  long-audio target with ``dataset.window.max_seconds=null`` takes as a complete window;
* a segmented HF copy (e.g. ``distil-whisper/earnings22``, ``chunked``): ``audio`` plus
  ``transcription`` (or ``text``/``sentence``) and ``file_id``/``segment_id``. Segments of one call
  pack into windows like any recording's utterances.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import DatasetLayoutError, Utterance, whole_file
from .hf import hf_segment

NAME = "earnings22"
LAYOUT = ("media/<file_id>.mp3 and transcripts/nlp_references/<file_id>.nlp (token|speaker|ts|endTs|punctuation|"
          "case|tags), or a segmented HF copy (audio, transcription, file_id)")
TEXT_COLUMNS = ("transcription", "text", "sentence")


def nlp_text(path: Path) -> str:
    """The reference words of an ``.nlp`` file with their punctuation (the first row is a header)."""
    words = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        cols = line.split("|")
        if cols and cols[0].strip():
            words.append(cols[0].strip() + (cols[4].strip() if len(cols) > 4 else ""))
    return " ".join(words)


def _base(root: Path) -> Path:
    return root / "earnings22" if (root / "earnings22" / "media").is_dir() else root


def probe(root: Path, opts: Mapping[str, Any]) -> None:
    base = _base(root)
    if not (base / "media").is_dir() or not (base / "transcripts" / "nlp_references").is_dir():
        raise DatasetLayoutError(NAME, root, "media/ or transcripts/nlp_references/ is missing", LAYOUT)


def load(root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    probe(root, opts)
    base = _base(root)
    out = []
    for nlp in sorted((base / "transcripts" / "nlp_references").glob("*.nlp")):
        media = base / "media" / f"{nlp.stem}.mp3"
        if not media.is_file():
            raise DatasetLayoutError(NAME, root, f"{nlp.name} has no media/{media.name}", LAYOUT)
        out.append(Utterance(nlp.stem, (whole_file(media),), nlp_text(nlp), nlp.stem, "en"))
    if not out:
        raise DatasetLayoutError(NAME, root, "no transcripts/nlp_references/*.nlp", LAYOUT)
    return out


def from_hf(rows: Iterable[dict[str, Any]], root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    out = []
    for i, r in enumerate(rows):
        col = next((c for c in TEXT_COLUMNS if c in r), None)
        if col is None:
            raise KeyError("transcription")
        call = str(r.get("file_id") or r.get("id") or "call")
        uid = str(r.get("segment_id") or f"{call}-{i:05d}")
        out.append(Utterance(f"{call}/{uid}" if not uid.startswith(call) else uid,
                             (hf_segment(r["audio"], root, uid),), str(r[col]).strip(), call, "en"))
    return out
