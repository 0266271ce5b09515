"""FLEURS (Conneau et al., 2022), the six languages of the ASR cohort.

Layout (the ``google/fleurs`` release, audio archives unpacked): ``[data/]<lang>/<split>.tsv`` with
tab-separated ``id, file_name, raw_transcription, transcription, characters, num_samples, gender``
(no header) and ``<lang>/audio/<split>/<file_name>``. ``dataset.languages`` lists the folder names
(e.g. ``de_de``). The reference is ``raw_transcription`` (cased, punctuated). FLEURS has no
recording structure; windows pack consecutive rows of one language. HF copies carry ``audio``,
``raw_transcription``, ``id``, ``language`` and ``lang_id`` (or are read per language folder).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import DatasetLayoutError, Utterance, whole_file
from .hf import hf_segment

NAME = "fleurs"
LAYOUT = ("[data/]<lang>/<split>.tsv (id, file_name, raw_transcription, transcription, ...) and "
          "<lang>/audio/<split>/*.wav")
# FLEURS folder -> the language name Qwen3-ASR's prompt and quality scoring (CER for zh/ja) use.
LANGUAGE = {"en_us": "en", "de_de": "de", "fr_fr": "fr", "es_419": "es", "ja_jp": "ja", "cmn_hans_cn": "zh",
            "yue_hant_hk": "yue", "ko_kr": "ko", "ru_ru": "ru", "it_it": "it", "pt_br": "pt", "ar_eg": "ar"}


def _base(root: Path) -> Path:
    return root / "data" if (root / "data").is_dir() and not any(root.glob("*/*.tsv")) else root


def probe(root: Path, opts: Mapping[str, Any]) -> None:
    base, split = _base(root), str(opts.get("source_split", "test"))
    langs = list(opts.get("languages") or [])
    missing = [str(base / lang / f"{split}.tsv") for lang in langs if not (base / lang / f"{split}.tsv").is_file()]
    if missing or not any(base.glob(f"*/{split}.tsv")):
        raise DatasetLayoutError(NAME, root, f"missing {missing[:3] or f'<lang>/{split}.tsv'}", LAYOUT)


def load(root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    base, split = _base(root), str(opts.get("source_split", "test"))
    langs = list(opts.get("languages") or sorted(p.parent.name for p in base.glob(f"*/{split}.tsv")))
    out: list[Utterance] = []
    for lang in langs:
        tsv = base / lang / f"{split}.tsv"
        if not tsv.is_file():
            raise DatasetLayoutError(NAME, root, f"{tsv} is missing", LAYOUT)
        with tsv.open(encoding="utf-8", newline="") as f:
            for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                if len(row) < 4:
                    raise DatasetLayoutError(NAME, root, f"{tsv}: a row has {len(row)} columns, not 7", LAYOUT)
                wav = base / lang / "audio" / split / row[1]
                if not wav.is_file():
                    raise DatasetLayoutError(NAME, root, f"{tsv} lists {row[1]} but {wav} is missing", LAYOUT)
                out.append(Utterance(f"{lang}/{Path(row[1]).stem}", (whole_file(wav),), row[2].strip(), lang,
                                     LANGUAGE.get(lang, lang.split("_")[0]), meta={"fleurs_id": row[0]}))
    if not out:
        raise DatasetLayoutError(NAME, root, f"no <lang>/{split}.tsv found", LAYOUT)
    return out


def from_hf(rows: Iterable[dict[str, Any]], root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    wanted = set(opts.get("languages") or [])
    out = []
    for r in rows:
        lang = str(r.get("lang_id") or r.get("language") or root.name)
        if wanted and lang not in wanted:
            continue
        audio = r["audio"]
        path = audio.get("path") if isinstance(audio, dict) else None
        name = Path(str(path or r.get("path") or r["id"])).stem
        uid = f"{lang}/{name}"
        out.append(Utterance(uid, (hf_segment(audio, root, uid),), str(r["raw_transcription"]).strip(), lang,
                             LANGUAGE.get(lang, lang.split("_")[0]), meta={"fleurs_id": str(r["id"])}))
    return out
