"""LibriSpeech (Panayotov et al., 2015): ``<subset>/<speaker>/<chapter>/<speaker>-<chapter>-<utt>.flac``
with one ``<speaker>-<chapter>.trans.txt`` per chapter (``<utt-id> UPPERCASE WORDS`` lines).

``dataset.root`` is the ``LibriSpeech/`` folder (``dataset.subset`` picks e.g. ``test-clean``) or a
subset folder itself. A chapter is one recording: windows pack consecutive utterances of a chapter.
HF copies (``openslr/librispeech_asr``) carry ``audio``, ``text``, ``id``, ``speaker_id``, ``chapter_id``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import DatasetLayoutError, Utterance, find_audio, whole_file
from .hf import hf_segment

NAME = "librispeech"
LAYOUT = ("LibriSpeech/<subset>/<speaker>/<chapter>/<speaker>-<chapter>.trans.txt beside "
          "<speaker>-<chapter>-<utt>.flac or .wav (root = LibriSpeech/ with dataset.subset, or the subset folder)")


def _subset_dir(root: Path, subset: str | None) -> Path:
    if subset and (root / subset).is_dir():
        return root / subset
    if subset and (root / "LibriSpeech" / subset).is_dir():
        return root / "LibriSpeech" / subset
    if next(root.glob("*/*/*.trans.txt"), None) is not None:
        return root  # already a subset folder
    found = sorted(p.name for p in root.iterdir() if p.is_dir())
    raise DatasetLayoutError(NAME, root, f"no subset {subset!r} and no */*/*.trans.txt (folders: {found[:6]})",
                             LAYOUT)


def probe(root: Path, opts: Mapping[str, Any]) -> None:
    _subset_dir(root, opts.get("subset"))


def load(root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    base = _subset_dir(root, opts.get("subset"))
    out: list[Utterance] = []
    for trans in sorted(base.glob("*/*/*.trans.txt")):
        chapter = trans.name.removesuffix(".trans.txt")
        for line in trans.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            utt, _, words = line.strip().partition(" ")
            # the .flac or its .wav twin; a missing or unreadable one is named by the validation pass
            flac = find_audio(trans.parent / f"{utt}.flac")
            out.append(Utterance(utt, (whole_file(flac),), words.strip(), chapter, "en"))
    if not out:
        raise DatasetLayoutError(NAME, root, f"no utterances under {base}", LAYOUT)
    return out


def from_hf(rows: Iterable[dict[str, Any]], root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    out = []
    for r in rows:
        utt = str(r["id"])
        group = f"{r.get('speaker_id', '')}-{r.get('chapter_id', '')}" if "chapter_id" in r else utt.rsplit("-", 1)[0]
        out.append(Utterance(utt, (hf_segment(r["audio"], root, utt),), str(r["text"]).strip(), group, "en"))
    return out
