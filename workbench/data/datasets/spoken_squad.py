"""Spoken SQuAD (Lee et al., 2018): SQuAD v1.1 questions about spoken passages.

Layout: ``spoken_test-v1.1.json`` (SQuAD format: ``data[a].paragraphs[p].qas[q]`` with ``id``,
``question`` and ``answers``) and one wav per passage sentence, ``<audio_dir>/<a>_<p>_<s>.wav``
(``dev_wav/`` for the test set). A passage's audio is its sentences in order; every question on it
is one request sharing that audio (the question is text in the instruction). The reference is the
first answer; ``meta["answers"]`` keeps all of them for token F1. HF copies carry ``audio``,
``question``, ``answers`` (``{"text": [...]}`` or a list), ``id`` and ``context``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import DatasetLayoutError, Utterance, whole_file
from .hf import hf_segment

NAME = "spoken_squad"
LAYOUT = "spoken_test-v1.1.json (SQuAD format) and dev_wav/<article>_<paragraph>_<sentence>.wav"


def _answers(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [str(t) for t in value.get("text", [])]
    return [str(a["text"]) if isinstance(a, dict) else str(a) for a in value or []]


def probe(root: Path, opts: Mapping[str, Any]) -> None:
    doc = root / str(opts.get("json", "spoken_test-v1.1.json"))
    audio = root / str(opts.get("audio_dir", "dev_wav"))
    if not doc.is_file() or not audio.is_dir():
        raise DatasetLayoutError(NAME, root, f"{doc.name} or {audio.name}/ is missing", LAYOUT)


def load(root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    doc = root / str(opts.get("json", "spoken_test-v1.1.json"))
    audio = root / str(opts.get("audio_dir", "dev_wav"))
    if not doc.is_file() or not audio.is_dir():
        raise DatasetLayoutError(NAME, root, f"{doc.name} or {audio.name}/ is missing", LAYOUT)
    wavs: dict[tuple[int, int], list[tuple[int, Path]]] = {}
    for wav in audio.glob("*.wav"):
        parts = wav.stem.split("_")
        if len(parts) == 3 and all(p.isdigit() for p in parts):
            wavs.setdefault((int(parts[0]), int(parts[1])), []).append((int(parts[2]), wav))
    out = []
    for a, article in enumerate(json.loads(doc.read_text(encoding="utf-8"))["data"]):
        for p, para in enumerate(article["paragraphs"]):
            sentences = sorted(wavs.get((a, p), []))
            if not sentences:
                raise DatasetLayoutError(NAME, root, f"passage {a}_{p} has no {audio.name}/{a}_{p}_<s>.wav", LAYOUT)
            segs = tuple(whole_file(w) for _, w in sentences)
            for qa in para["qas"]:
                answers = _answers(qa["answers"])
                out.append(Utterance(str(qa["id"]), segs, para["context"], f"{a}_{p}", "en",
                                     reference=answers[0] if answers else "",
                                     meta={"question": qa["question"], "answers": answers}))
    if not out:
        raise DatasetLayoutError(NAME, root, f"{doc.name} has no questions", LAYOUT)
    return out


def from_hf(rows: Iterable[dict[str, Any]], root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    out = []
    for r in rows:
        uid = str(r["id"])
        answers = _answers(r.get("answers"))
        out.append(Utterance(uid, (hf_segment(r["audio"], root, uid),), str(r.get("context", "")),
                             str(r.get("title", uid)), "en", reference=answers[0] if answers else "",
                             meta={"question": str(r["question"]), "answers": answers}))
    return out
