"""GigaSpeech (Chen et al., 2021), for the B.1 per-corpus acceptance probes.

Layout (the SpeechColab release, audio decrypted): ``GigaSpeech.json`` with ``{"audios": [{"aid",
"path": "audio/<source>/<P>/<aid>.opus", "segments": [{"sid", "begin_time", "end_time", "text_tn",
"subsets": ["{TEST}", ...]}]}]}`` and the audio files under the root. ``dataset.subset`` (``TEST``)
picks the segments. ``text_tn`` is upper-case with punctuation tags (``<COMMA>``...), mapped back to
punctuation; segments holding only garbage tags (``<SIL>``, ``<MUSIC>``, ``<NOISE>``, ``<OTHER>``)
are not speech and are left out. A podcast/video is the recording unit: windows pack its segments.
HF copies (``speechcolab/gigaspeech``) carry ``segment_id``, ``audio_id``, ``text``, ``audio``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import DatasetLayoutError, Segment, Utterance
from .hf import hf_segment

NAME = "gigaspeech"
LAYOUT = ('GigaSpeech.json ({"audios": [{"aid", "path", "segments": [{"sid", "begin_time", "end_time", '
          '"text_tn", "subsets"}]}]}) beside the audio/ folder it names')
PUNCTUATION = {"<COMMA>": ",", "<PERIOD>": ".", "<QUESTIONMARK>": "?", "<EXCLAMATIONPOINT>": "!"}
GARBAGE = ("<SIL>", "<MUSIC>", "<NOISE>", "<OTHER>")
_TAG = re.compile(r"\s*(<[A-Z]+>)")


def clean(text: str) -> str:
    """``text_tn`` as plain text: punctuation tags become punctuation, garbage tags are dropped."""
    out = _TAG.sub(lambda m: PUNCTUATION.get(m.group(1), ""), text)
    return " ".join(out.split())


def _meta(root: Path) -> Path:
    for p in (root / "GigaSpeech.json", root / "GigaSpeech" / "GigaSpeech.json"):
        if p.is_file():
            return p
    raise DatasetLayoutError(NAME, root, "GigaSpeech.json is missing", LAYOUT)


def probe(root: Path, opts: Mapping[str, Any]) -> None:
    _meta(root)


def load(root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    meta = _meta(root)
    base = meta.parent
    subset = "{" + str(opts.get("subset") or "TEST").strip("{}") + "}"
    out: list[Utterance] = []
    for audio in json.loads(meta.read_text(encoding="utf-8"))["audios"]:
        segs = [s for s in audio.get("segments", []) if subset in s.get("subsets", [])]
        if not segs:
            continue
        path = base / audio["path"]
        if not path.is_file():
            raise DatasetLayoutError(NAME, root, f"GigaSpeech.json names {audio['path']} but {path} is missing",
                                     LAYOUT)
        for s in sorted(segs, key=lambda s: float(s["begin_time"])):
            text = clean(str(s["text_tn"]))
            if not text:  # only garbage tags: no speech to transcribe
                continue
            start, end = float(s["begin_time"]), float(s["end_time"])
            out.append(Utterance(str(s["sid"]), (Segment(path, end - start, start=start),), text, str(audio["aid"]),
                                 "en", meta={"start": start, "end": end}))
    if not out:
        raise DatasetLayoutError(NAME, root, f"no segment of subset {subset} with speech", LAYOUT)
    return out


def from_hf(rows: Iterable[dict[str, Any]], root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    out = []
    for r in rows:
        text = clean(str(r["text"]))
        if not text:
            continue
        sid = str(r["segment_id"])
        group = str(r.get("audio_id") or sid.rsplit("_", 1)[0])
        out.append(Utterance(sid, (hf_segment(r["audio"], root, sid),), text, group, "en"))
    return sorted(out, key=lambda u: (u.group, u.utt_id))
