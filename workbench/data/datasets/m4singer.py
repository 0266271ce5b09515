"""M4Singer (Zhang et al., 2022): Mandarin singing, one folder per singer and song.

Layout: ``m4singer/meta.json`` (a list of ``{"item_name": "<singer>#<song>#<idx>", "txt": lyrics,
...}``) and ``m4singer/<singer>#<song>/<idx>.wav`` (``.mid``/``.TextGrid`` beside them are not
needed). The reference is the lyric text (``txt``). A song is the recording unit: windows pack
consecutive phrases of one song. HF copies carry ``audio``, ``txt`` (or ``text``) and ``item_name``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import DatasetLayoutError, Utterance, whole_file
from .hf import hf_segment

NAME = "m4singer"
LAYOUT = ('m4singer/meta.json ([{"item_name": "<singer>#<song>#<idx>", "txt": ...}]) and '
          "m4singer/<singer>#<song>/<idx>.wav")


def _song_and_index(item: str) -> tuple[str, str]:
    song, _, idx = item.rpartition("#")
    return song, idx


def probe(root: Path, opts: Mapping[str, Any]) -> None:
    if not (root / "m4singer" / "meta.json").is_file() and not (root / "meta.json").is_file():
        raise DatasetLayoutError(NAME, root, "meta.json is missing", LAYOUT)


def load(root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    base = root / "m4singer" if (root / "m4singer" / "meta.json").is_file() else root
    meta = base / "meta.json"
    if not meta.is_file():
        raise DatasetLayoutError(NAME, root, "meta.json is missing", LAYOUT)
    out = []
    for item in json.loads(meta.read_text(encoding="utf-8")):
        song, idx = _song_and_index(str(item["item_name"]))
        wav = base / song / f"{idx}.wav"
        if not wav.is_file():
            raise DatasetLayoutError(NAME, root, f"meta.json lists {item['item_name']} but {wav} is missing", LAYOUT)
        # lyrics in meta.json may carry <AP>/<SP> breath and silence marks: not words anyone sang
        text = "".join(str(item["txt"]).replace("<AP>", "").replace("<SP>", "").split())
        out.append(Utterance(str(item["item_name"]), (whole_file(wav),), text, song, "zh"))
    return sorted(out, key=lambda u: (u.group, _song_and_index(u.utt_id)[1]))


def from_hf(rows: Iterable[dict[str, Any]], root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    out = []
    for r in rows:
        uid = str(r["item_name"])
        text = "".join(str(r.get("txt", r.get("text", ""))).replace("<AP>", "").replace("<SP>", "").split())
        out.append(Utterance(uid, (hf_segment(r["audio"], root, uid),), text, _song_and_index(uid)[0], "zh"))
    return sorted(out, key=lambda u: (u.group, _song_and_index(u.utt_id)[1]))
