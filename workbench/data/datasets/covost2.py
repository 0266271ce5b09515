"""CoVoST 2 speech translation (Wang et al., 2021) on Common Voice clips: en->zh-CN and zh-CN->en.

Layout: the Common Voice language folder ``<root>/<src>/clips/*.mp3`` and the CoVoST 2 table
``covost_v2.<src>_<tgt>.<split>.tsv`` (after ``get_covost_splits.py``) or ``covost_v2.<src>_<tgt>.tsv``
with a ``split`` column, in ``<root>/<src>/`` or ``<root>/``. Columns (tab-separated, with a header):
``path, sentence, translation, client_id[, split]``. ``dataset.direction`` is ``en_zh-CN`` or
``zh-CN_en``. Each clip is one request (no packing); the reference is ``translation``. HF copies
carry ``audio``, ``sentence``, ``translation`` and ``id`` (or ``path``).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import DatasetLayoutError, Utterance, whole_file
from .hf import hf_segment

NAME = "covost2"
LAYOUT = ("<src>/clips/*.mp3 (Common Voice) and [<src>/]covost_v2.<src>_<tgt>.<split>.tsv "
          "(path, sentence, translation, client_id) for dataset.direction=en_zh-CN or zh-CN_en")
DIRECTIONS = ("en_zh-CN", "zh-CN_en")


def direction(opts: Mapping[str, Any]) -> tuple[str, str]:
    d = str(opts.get("direction", "en_zh-CN"))
    if d not in DIRECTIONS:
        raise ValueError(f"dataset.direction: {d!r} is not one of {list(DIRECTIONS)}")
    src, tgt = d.split("_")
    return src, tgt


def _language(code: str) -> str:
    return code.split("-")[0]


def _table(root: Path, src: str, tgt: str, split: str) -> tuple[Path, bool]:
    for folder in (root / src, root):
        for name, filtered in ((f"covost_v2.{src}_{tgt}.{split}.tsv", False), (f"covost_v2.{src}_{tgt}.tsv", True)):
            if (folder / name).is_file():
                return folder / name, filtered
    raise DatasetLayoutError(NAME, root, f"no covost_v2.{src}_{tgt}[.{split}].tsv in {root / src} or {root}", LAYOUT)


def probe(root: Path, opts: Mapping[str, Any]) -> None:
    src, tgt = direction(opts)
    _table(root, src, tgt, str(opts.get("source_split", "test")))
    if not (root / src / "clips").is_dir():
        raise DatasetLayoutError(NAME, root, f"{root / src / 'clips'} is missing", LAYOUT)


def load(root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    src, tgt = direction(opts)
    split = str(opts.get("source_split", "test"))
    tsv, filtered = _table(root, src, tgt, split)
    clips = root / src / "clips"
    if not clips.is_dir():
        raise DatasetLayoutError(NAME, root, f"{clips} is missing", LAYOUT)
    out = []
    with tsv.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            if filtered and row.get("split") != split:
                continue
            clip = clips / row["path"]
            if not clip.is_file():
                raise DatasetLayoutError(NAME, root, f"{tsv.name} lists {row['path']} but {clip} is missing", LAYOUT)
            uid = Path(row["path"]).stem
            out.append(Utterance(uid, (whole_file(clip),), row["sentence"].strip(), uid, _language(src),
                                 reference=row["translation"].strip(),
                                 meta={"source_language": _language(src), "target_language": _language(tgt)}))
    if not out:
        raise DatasetLayoutError(NAME, root, f"{tsv} has no {split!r} rows", LAYOUT)
    return out


def from_hf(rows: Iterable[dict[str, Any]], root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    src, tgt = direction(opts)
    out = []
    for r in rows:
        uid = Path(str(r.get("id") or r.get("path"))).stem
        out.append(Utterance(uid, (hf_segment(r["audio"], root, uid),), str(r["sentence"]).strip(), uid,
                             _language(src), reference=str(r["translation"]).strip(),
                             meta={"source_language": _language(src), "target_language": _language(tgt)}))
    return out
