"""AMI meeting corpus, single distant microphone (Carletta et al., 2006).

Layout: the audio release ``amicorpus/<meeting>/audio/<meeting>.Array1-01.wav`` (SDM = first
channel of array 1) and the NXT manual annotations unpacked beside it (``ami_public_manual_1.6.2``):
``segments/<meeting>.<A-E>.segments.xml`` whose ``<segment>`` elements point into
``words/<meeting>.<A-E>.words.xml`` by ``href="...#id(first)..id(last)"``. A segment's text is its
``<w>`` words in order (punctuation marks attached, vocal sounds and gaps dropped). A meeting is
one recording: windows pack consecutive segments by start time. ``dataset.meetings`` restricts to
a list (e.g. the official test meetings). HF copies (``edinburghcstr/ami``, config ``sdm``) carry
``audio``, ``text``, ``audio_id``, ``meeting_id``, ``begin_time``, ``end_time``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import DatasetLayoutError, Segment, Utterance, file_seconds
from .hf import hf_segment

NAME = "ami"
LAYOUT = ("amicorpus/<meeting>/audio/<meeting>.Array1-01.wav plus NXT annotations "
          "[annotations/|ami_public_manual_1.6.2/]segments/<meeting>.<spk>.segments.xml and "
          "words/<meeting>.<spk>.words.xml")
NITE = "{http://nite.sourceforge.net/}"
_HREF = re.compile(r"#id\(([^)]+)\)(?:\.\.id\(([^)]+)\))?")


def _annotation_dir(root: Path) -> Path:
    for cand in (root, root / "annotations", root / "ami_public_manual_1.6.2"):
        if (cand / "segments").is_dir() and (cand / "words").is_dir():
            return cand
    raise DatasetLayoutError(NAME, root, "no segments/ and words/ annotation folders", LAYOUT)


def _words(path: Path) -> tuple[list[str], dict[str, int], list[bool]]:
    """Word-file tokens in order, their index by NXT id, and whether each is a spoken word."""
    ids, index, is_word = [], {}, []
    for el in ET.parse(path).getroot():
        nid = el.get(f"{NITE}id")
        if nid is None:
            continue
        index[nid] = len(ids)
        word = el.tag == "w" and bool((el.text or "").strip())
        ids.append((el.text or "").strip() if word else "")
        is_word.append(word and el.get("punc") != "true")
    return ids, index, is_word


def _join(tokens: list[str], words: list[bool]) -> str:
    out = ""
    for tok, w in zip(tokens, words, strict=True):
        if not tok:
            continue
        out += (" " if out and w else "") + tok  # punctuation attaches to the previous word
    return out.strip()


def _meeting_segments(ann: Path, meeting: str, wav: Path) -> list[tuple[float, float, str, str]]:
    rows = []
    for seg_file in sorted((ann / "segments").glob(f"{meeting}.*.segments.xml")):
        spk = seg_file.name.split(".")[1]
        words_file = ann / "words" / f"{meeting}.{spk}.words.xml"
        tokens, index, is_word = _words(words_file) if words_file.is_file() else ([], {}, [])
        for seg in ET.parse(seg_file).getroot().iter("segment"):
            start, end = float(seg.get("transcriber_start", 0)), float(seg.get("transcriber_end", 0))
            text = ""
            for child in seg:
                m = _HREF.search(child.get("href", ""))
                if m and m.group(1) in index:
                    a = index[m.group(1)]
                    b = index.get(m.group(2) or m.group(1), a)
                    text = _join(tokens[a:b + 1], is_word[a:b + 1])
            if text and end > start:
                rows.append((start, end, text, seg.get(f"{NITE}id") or f"{meeting}.{spk}.{start:.2f}"))
    return sorted(rows)


def probe(root: Path, opts: Mapping[str, Any]) -> None:
    _annotation_dir(root)
    audio_root = root / "amicorpus" if (root / "amicorpus").is_dir() else root
    channel = str(opts.get("channel", "Array1-01"))
    if next(audio_root.glob(f"*/audio/*.{channel}.wav"), None) is None:
        raise DatasetLayoutError(NAME, root, f"no */audio/*.{channel}.wav under {audio_root}", LAYOUT)


def load(root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    ann = _annotation_dir(root)
    audio_root = root / "amicorpus" if (root / "amicorpus").is_dir() else root
    wanted = set(opts.get("meetings") or [])
    channel = str(opts.get("channel", "Array1-01"))
    out: list[Utterance] = []
    wavs = sorted(audio_root.glob(f"*/audio/*.{channel}.wav"))
    if not wavs:
        raise DatasetLayoutError(NAME, root, f"no */audio/*.{channel}.wav under {audio_root}", LAYOUT)
    found = sorted(w.name.split(".")[0] for w in wavs)
    if wanted and not wanted & set(found):
        raise DatasetLayoutError(NAME, root, f"none of dataset.meetings={sorted(wanted)} is there "
                                 f"(found {found[:8]})", LAYOUT)
    for wav in wavs:
        meeting = wav.name.split(".")[0]
        if wanted and meeting not in wanted:
            continue
        total = file_seconds(wav)
        for start, end, text, sid in _meeting_segments(ann, meeting, wav):
            end = min(end, total)
            if end > start:
                out.append(Utterance(sid, (Segment(wav, end - start, start=start),), text, meeting, "en",
                                     meta={"start": start, "end": end}))
    if not out:
        raise DatasetLayoutError(NAME, root, "no annotated segments for the audio found", LAYOUT)
    return out


def from_hf(rows: Iterable[dict[str, Any]], root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    wanted = set(opts.get("meetings") or [])
    out = []
    for r in rows:
        if wanted and r["meeting_id"] not in wanted:
            continue
        uid = str(r.get("audio_id") or r.get("id"))
        out.append(Utterance(uid, (hf_segment(r["audio"], root, uid),), str(r["text"]).strip(),
                             str(r["meeting_id"]), "en",
                             meta={"start": float(r.get("begin_time", 0.0)), "end": float(r.get("end_time", 0.0))}))
    # windows pack by start time within a meeting, as in the native layout
    return sorted(out, key=lambda u: (u.group, u.meta["start"], u.utt_id))
