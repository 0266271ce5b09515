"""SPGISpeech (O'Neill et al., 2021), for the B.1 per-corpus acceptance probes.

Layout (Kensho's release): ``<split>.csv``, pipe-separated with a header ``wav_filename|wav_filesize|
transcript``, and ``<split>/<call>/<n>.wav`` (16 kHz mono slices of 5-15 s of one earnings call).
``dataset.source_split`` picks the csv (``val``); ``wav_filename`` is read relative to the split
folder (or to the root). The transcript is fully formatted (cased, punctuated). A call is the
recording unit: windows pack its consecutive slices. HF copies (``kensho/spgispeech``) carry
``wav_filename``, ``audio`` and ``transcript``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .base import DatasetLayoutError, Utterance, whole_file
from .hf import hf_segment

NAME = "spgispeech"
LAYOUT = "<split>.csv (wav_filename|wav_filesize|transcript) and <split>/<call>/<n>.wav"


def _order(name: str) -> tuple[str, int, str]:
    """Slices of one call in spoken order: ``<call>/<n>.wav`` by call, then n as a number."""
    p = Path(name)
    return (p.parent.as_posix(), int(p.stem) if p.stem.isdigit() else 0, p.name)


def _csv(root: Path, opts: Mapping[str, Any]) -> Path:
    split = str(opts.get("source_split") or "val")
    for p in (root / f"{split}.csv", root / "spgispeech" / f"{split}.csv"):
        if p.is_file():
            return p
    raise DatasetLayoutError(NAME, root, f"{split}.csv is missing", LAYOUT)


def probe(root: Path, opts: Mapping[str, Any]) -> None:
    _csv(root, opts)


def load(root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    table = _csv(root, opts)
    base, split = table.parent, table.stem
    out: list[Utterance] = []
    with table.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="|", quoting=csv.QUOTE_NONE))
    if rows and not {"wav_filename", "transcript"} <= set(rows[0]):
        raise DatasetLayoutError(NAME, root, f"{table} has columns {sorted(rows[0])}", LAYOUT)
    for r in sorted(rows, key=lambda r: _order(r["wav_filename"])):
        name = r["wav_filename"]
        wav = next((p for p in (base / split / name, base / name) if p.is_file()), None)
        if wav is None:
            raise DatasetLayoutError(NAME, root, f"{table.name} lists {name} but {base / split / name} is missing",
                                     LAYOUT)
        call = Path(name).parent.as_posix()
        out.append(Utterance(Path(name).with_suffix("").as_posix(), (whole_file(wav),), r["transcript"].strip(),
                             call, "en"))
    if not out:
        raise DatasetLayoutError(NAME, root, f"{table} has no rows", LAYOUT)
    return out


def from_hf(rows: Iterable[dict[str, Any]], root: Path, opts: Mapping[str, Any]) -> list[Utterance]:
    out = []
    for r in rows:
        name = str(r["wav_filename"])
        uid = Path(name).with_suffix("").as_posix()
        out.append(Utterance(uid, (hf_segment(r["audio"], root, uid),), str(r["transcript"]).strip(),
                             Path(name).parent.as_posix(), "en"))
    return sorted(out, key=lambda u: _order(u.utt_id + ".wav"))
