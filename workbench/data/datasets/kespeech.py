"""KeSpeech (Tang et al., 2021): Mandarin and eight Chinese subdialects, Kaldi-style task lists.

Layout: ``KeSpeech/Tasks/ASR/<split>/wav.scp`` (``<utt> Audio/<spk>/<phase>/<utt>.wav``, relative to
the KeSpeech folder or absolute), ``text`` (``<utt> <characters>``), and optionally
``utt2subdialect`` and ``utt2spk``. ``dataset.subdialects`` keeps only those (e.g. ``Southwestern``).
A speaker is the recording unit: windows pack consecutive utterances of one speaker. HF copies
carry ``audio``, ``text``, ``id`` and optionally ``subdialect``/``speaker_id``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import DatasetLayoutError, Utterance, whole_file
from .hf import hf_segment

NAME = "kespeech"
LAYOUT = "KeSpeech/Tasks/ASR/<split>/{wav.scp,text[,utt2subdialect,utt2spk]} with wav.scp paths relative to KeSpeech/"


def _kaldi_map(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        key, _, value = line.strip().partition(" ")
        if key:
            out[key] = value.strip()
    return out


def probe(root: Path, opts: Mapping[str, Any]) -> None:
    base = root / "KeSpeech" if (root / "KeSpeech" / "Tasks").is_dir() else root
    scp = base / "Tasks" / "ASR" / str(opts.get("source_split", "test")) / "wav.scp"
    if not scp.is_file():
        raise DatasetLayoutError(NAME, root, f"{scp} is missing", LAYOUT)


def load(root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    base = root / "KeSpeech" if (root / "KeSpeech" / "Tasks").is_dir() else root
    task = base / "Tasks" / "ASR" / str(opts.get("source_split", "test"))
    scp = _kaldi_map(task / "wav.scp")
    if not scp:
        raise DatasetLayoutError(NAME, root, f"{task / 'wav.scp'} is missing or empty", LAYOUT)
    text = _kaldi_map(task / "text")
    dialect, spk = _kaldi_map(task / "utt2subdialect"), _kaldi_map(task / "utt2spk")
    wanted = set(opts.get("subdialects") or [])
    out = []
    for utt, rel in scp.items():
        if wanted and dialect.get(utt) not in wanted:
            continue
        if utt not in text:
            raise DatasetLayoutError(NAME, root, f"{utt} is in wav.scp but not in {task / 'text'}", LAYOUT)
        wav = Path(rel) if Path(rel).is_absolute() else base / rel
        if not wav.is_file():
            raise DatasetLayoutError(NAME, root, f"wav.scp lists {rel} but {wav} is missing", LAYOUT)
        group = spk.get(utt) or utt.split("_")[0]
        out.append(Utterance(utt, (whole_file(wav),), text[utt], group, "zh",
                             meta={"subdialect": dialect.get(utt, "")}))
    return sorted(out, key=lambda u: (u.group, u.utt_id))


def from_hf(rows: Iterable[dict[str, Any]], root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    wanted = set(opts.get("subdialects") or [])
    out = []
    for r in rows:
        d = str(r.get("subdialect", ""))
        if wanted and d not in wanted:
            continue
        uid = str(r["id"])
        group = str(r.get("speaker_id") or uid.split("_")[0])
        out.append(Utterance(uid, (hf_segment(r["audio"], root, uid),), str(r["text"]).strip(), group, "zh",
                             meta={"subdialect": d}))
    return sorted(out, key=lambda u: (u.group, u.utt_id))
