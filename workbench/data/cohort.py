"""Cohorts and splits (D.1.2, D.2.6): which windows a run uses, chosen without model outputs.

ASR cohort: within each dataset, windows are put in a canonical order (by SHA-256 of their id, so
the filesystem's listing order cannot matter), shuffled with seed 20260915, and drawn in turn for
each split: test (165 LibriSpeech, 53 AMI, 91 FLEURS, 188 KeSpeech, 191 M4Singer = 688), then the
balanced development (10 each = 50) and validation (20 each = 100) windows, then the 60 s
calibration windows, all disjoint. Nothing about a window's output enters the draw, so a window
whose target output reaches the generation cap stays in (the paper keeps its one capped output).

Translation cohort: ids sorted by ``SHA256("20260923:" + audio_sha256)``; en->zh takes the first
80 as test, zh->en first takes the 24-sample budget-selection pilot (dev), then 80 test.

The manifest (one row per selected window) is written as parquet and logged with the run, so a run
names exactly which windows, in which split, it used.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.data.datasets.windows import DatasetWindow
from workbench.errors import ConfigError

PAPER_SEED = 20260915
TRANSLATION_SALT = "20260923"
PAPER_ASR_TEST = {"librispeech": 165, "ami": 53, "fleurs": 91, "kespeech": 188, "m4singer": 191}  # = 688
PAPER_DEV_PER_DATASET, PAPER_VALIDATION_PER_DATASET = 10, 20  # 50 development, 100 validation windows
CALIBRATION = "calibration"


def sha256_hex(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def audio_sha256(w: DatasetWindow) -> str:
    """The window's audio identity: the file's bytes for a whole single file (the paper hashes the
    clip), the encoded bytes for an HF column, else the decoded float32 samples."""
    if len(w.segments) == 1 and w.segments[0].start == 0.0:
        seg = w.segments[0]
        if seg.data is not None:
            return sha256_hex(seg.data)
        if seg.path is not None:
            h = hashlib.sha256()
            with open(seg.path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            return h.hexdigest()
    return sha256_hex(w.load().tobytes())


def shuffled(windows: Sequence[DatasetWindow], seed: int = PAPER_SEED) -> list[DatasetWindow]:
    """SHA-256-ordered ids, then a seeded shuffle: the same draw whatever order the loader listed."""
    ordered = sorted(windows, key=lambda w: sha256_hex(w.window_id))
    random.Random(seed).shuffle(ordered)
    return ordered


def audio_hash_order(windows: Sequence[DatasetWindow], salt: str = TRANSLATION_SALT) -> list[DatasetWindow]:
    """The translation rule: sort by ``SHA256(salt:audio_sha256)``."""
    return sorted(windows, key=lambda w: (sha256_hex(f"{salt}:{audio_sha256(w)}"), w.window_id))


def draw_splits(ordered: Sequence[DatasetWindow], splits: Mapping[str, int | None], *,
                calibration_min_seconds: float = 0.0, dataset: str = "dataset") -> dict[str, list[DatasetWindow]]:
    """Take each split's count in turn from ``ordered`` (``None`` = all that remain); disjoint.

    The calibration split takes the first remaining windows at least ``calibration_min_seconds``
    long (the paper's calibration audio is a ~60 s window). Every split's count is checked in the
    same pass: a corpus too small for several splits is one ``ConfigError`` naming all of them."""
    rest = list(ordered)
    out: dict[str, list[DatasetWindow]] = {}
    short: list[str] = []
    for name, count in splits.items():
        pool = [w for w in rest if w.seconds >= calibration_min_seconds] if name == CALIBRATION else rest
        n = len(pool) if count is None else int(count)
        if n < 0 or n > len(pool):
            what = f" of at least {calibration_min_seconds:g} s" if name == CALIBRATION else ""
            short.append(f"splits.{name}={count} but {len(pool)} windows{what} are left for it")
            n = max(0, min(n, len(pool)))
        out[name] = pool[:n]
        taken = {w.window_id for w in out[name]}
        rest = [w for w in rest if w.window_id not in taken]
    if short:
        longest = max((w.seconds for w in ordered), default=0.0)
        hint = (f"; no window is {calibration_min_seconds:g} s long (the longest is {longest:.1f} s: windows stop at "
                "the model's audio limit), so lower dataset.cohort.calibration_min_seconds or set "
                "dataset.cohort.splits.calibration=0"
                if any(s.startswith(f"splits.{CALIBRATION}=") for s in short) and longest < calibration_min_seconds
                else "")
        raise ConfigError("dataset.cohort", f"{dataset} has {len(ordered)} windows: {'; '.join(short)}",
                          fix=f"lower the counts or point dataset.root at the full split{hint}")
    return out


def select(windows: Sequence[DatasetWindow], cohort: Mapping[str, Any]) -> dict[str, list[DatasetWindow]]:
    """Splits of one dataset's windows per a ``dataset.cohort`` config section."""
    order = str(cohort.get("order", "shuffle"))
    if order == "shuffle":
        ordered = shuffled(windows, int(cohort.get("seed", PAPER_SEED)))
    elif order == "audio_hash":
        ordered = audio_hash_order(windows, str(cohort.get("salt", TRANSLATION_SALT)))
    else:
        raise ValueError(f"dataset.cohort.order must be 'shuffle' or 'audio_hash', got {order!r}")
    splits = dict(cohort.get("splits") or {"test": None})
    name = windows[0].dataset if windows else "dataset"
    return draw_splits(ordered, splits, calibration_min_seconds=float(cohort.get("calibration_min_seconds", 0.0)),
                       dataset=name)


def length_subgroup(ids: Sequence[str], useful_tokens: Mapping[str, int], *, min_tokens: int = 16,
                    n: int = 80) -> list[str]:
    """The QA>=16 rule (D.1.2): in cohort order, the first ``n`` questions whose target output has at
    least ``min_tokens`` useful tokens (excluding the first token chosen in prefill and EOS)."""
    missing = [i for i in ids if i not in useful_tokens]
    if missing:
        raise ValueError(f"no target output length for {len(missing)} questions (e.g. {missing[0]}); "
                         "collect target references first")
    return [i for i in ids if useful_tokens[i] >= min_tokens][:n]


def instruction(w: DatasetWindow) -> str:
    """The request's instruction (same for every method): ASR, translation target, or the QA question."""
    from workbench.data.datasets.instructions import task_instruction

    return task_instruction(w.task, target_language=w.meta.get("target_language"), question=w.meta.get("question"))


def manifest(splits: Mapping[str, Sequence[DatasetWindow]], *, hash_audio: bool = True) -> Any:
    """One row per selected window: split, draw rank, id, dataset, duration, utterances, reference."""
    import polars as pl

    rows = []
    for split, ws in splits.items():
        for rank, w in enumerate(ws):
            rows.append({"split": split, "rank": rank, "window_id": w.window_id, "dataset": w.dataset,
                         "task": w.task, "language": w.language, "group": w.group, "seconds": round(w.seconds, 6),
                         "n_utterances": len(w.utt_ids), "utt_ids": list(w.utt_ids),
                         "audio_sha256": audio_sha256(w) if hash_audio else None, "reference": w.reference,
                         "question": str(w.meta.get("question", "")) or None, "instruction": instruction(w),
                         "answers": [str(a) for a in w.meta.get("answers", [])] or None,
                         "target_language": w.meta.get("target_language")})
    schema = {"split": pl.String, "rank": pl.Int64, "window_id": pl.String, "dataset": pl.String,
              "task": pl.String, "language": pl.String, "group": pl.String, "seconds": pl.Float64,
              "n_utterances": pl.Int64, "utt_ids": pl.List(pl.String), "audio_sha256": pl.String,
              "reference": pl.String, "question": pl.String, "instruction": pl.String,
              "answers": pl.List(pl.String), "target_language": pl.String}
    return pl.DataFrame(rows, schema=schema)


def write_manifest(frame: Any, path: Path) -> Path:
    """Atomic parquet write (unique temp name, then rename)."""
    from workbench.io import atomic_write_parquet

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_parquet(path, frame)


def paper_asr_splits(dataset: str) -> dict[str, int]:
    """The paper's per-dataset split counts (test, dev, validation, one calibration window)."""
    if dataset not in PAPER_ASR_TEST:
        raise ValueError(f"{dataset} is not in the paper's ASR cohort ({sorted(PAPER_ASR_TEST)})")
    return {"test": PAPER_ASR_TEST[dataset], "dev": PAPER_DEV_PER_DATASET,
            "validation": PAPER_VALIDATION_PER_DATASET, CALIBRATION: 1}
