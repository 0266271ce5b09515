"""A dataset run's windows as a :class:`~workbench.data.corpus.Corpus` the trace jobs already read.

``corpus_from_dataset(cfg.dataset, cfg.model)`` loads the layout, builds complete-audio windows
under the model's limit, draws the cohort, keeps the split the run asked for (``dataset.split``),
and writes each window once as mono float32 16 kHz WAV under
``<cache>/windows/<name>-<key>/`` (key = root, loader options, window rule and limit), next to the
cohort manifest (``cohort.parquet``). Clip origins are the dataset name, so the jobs' balanced
splits stratify by dataset.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.data import cohort as C
from workbench.data.corpus import Clip, Corpus, default_corpus_dir
from workbench.errors import ConfigError

from . import dataset_windows
from .parts import COMBINED, part_configs
from .windows import DatasetWindow, model_max_seconds

log = logging.getLogger(__name__)
SPLIT_ALL = "all"


def write_window_wav(path: Path, audio: Any) -> Path:
    """Float32 16 kHz WAV, byte-identical for identical samples. libsndfile stamps float WAVs with a
    PEAK chunk holding the write time, which would change the file hash the trace cache keys on."""
    from scipy.io import wavfile

    from workbench.io import atomic_write_with

    return atomic_write_with(path, lambda tmp: wavfile.write(tmp, 16000, audio))


def windows_dir(ds: Mapping[str, Any], model: Mapping[str, Any] | None) -> Path:
    key = {k: v for k, v in ds.items() if k not in ("split", "max_windows")}
    key["root"] = str(Path(str(ds.get("root"))).expanduser().resolve())
    key["model_max_seconds"] = model_max_seconds(model)
    digest = C.sha256_hex(json.dumps(key, sort_keys=True, default=str))[:12]
    return default_corpus_dir().parents[1] / "windows" / f"{ds.get('name', 'dataset')}-{digest}"


def dataset_cohort(ds: Mapping[str, Any], model: Mapping[str, Any] | None = None
                   ) -> tuple[dict[str, list[DatasetWindow]], Any]:
    """All splits of the dataset's cohort and their manifest frame (audio hashed).

    A combined dataset (``loader: combined``) draws each part's cohort on its own (the paper's
    per-dataset counts) and concatenates the splits in part order."""
    if ds.get("loader") == COMBINED:
        import polars as pl

        splits: dict[str, list[DatasetWindow]] = {}
        frames = []
        for part in part_configs(ds):
            s, f = dataset_cohort(part, model)
            frames.append(f)
            for name, ws in s.items():
                splits.setdefault(name, []).extend(ws)
        return splits, pl.concat(frames)
    windows = dataset_windows(ds, model)
    if not windows:
        raise ConfigError(f"dataset.root={ds.get('root')}", "no complete-audio window fits the limit "
                          f"(model limit {model_max_seconds(model)} s)", fix="check dataset.window.max_seconds")
    splits = C.select(windows, ds.get("cohort") or {})
    return splits, C.manifest(splits)


def check_cohort(ds: Mapping[str, Any], model: Mapping[str, Any] | None = None) -> None:
    """Draw the cohort once before any run exists: every split count of every part is checked at once,
    and the split the run asks for exists (``dataset.split``)."""
    splits: dict[str, list[DatasetWindow]] = {}
    problems: list[ConfigError] = []
    for part in part_configs(ds) if ds.get("loader") == COMBINED else [ds]:
        try:
            for name, ws in C.select(dataset_windows(part, model), part.get("cohort") or {}).items():
                splits.setdefault(name, []).extend(ws)
        except ConfigError as err:
            problems.append(err)
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise ConfigError("dataset.cohort", " | ".join(p.what for p in problems), fix=problems[0].fix)
    chosen_split(ds, splits)


def chosen_split(ds: Mapping[str, Any], splits: Mapping[str, list[DatasetWindow]]) -> list[DatasetWindow]:
    name = str(ds.get("split", "test"))
    if name == SPLIT_ALL:
        return [w for ws in splits.values() for w in ws]
    if name not in splits:
        raise ConfigError("dataset.split", f"{name!r} is not a split of the cohort",
                          fix=f"choose one of {sorted(splits)} or 'all'")
    return list(splits[name])


def cohort_table(ds: Mapping[str, Any], model: Mapping[str, Any] | None = None) -> Any:
    """The cohort manifest a dataset run wrote (``cohort.parquet``), for the job to log; None if none."""
    import polars as pl

    if not ds.get("loader"):
        return None
    path = windows_dir(ds, model) / "cohort.parquet"
    return pl.read_parquet(path) if path.is_file() else None


def reduced(windows: list[DatasetWindow], n: int) -> list[DatasetWindow]:
    """The first ``n`` windows, taken round-robin over datasets (a reduced combined run keeps every
    dataset), each dataset's windows in cohort order."""
    if n < 0:
        raise ValueError(f"dataset.max_windows must be >= 0 or null, got {n}")
    queues: dict[str, list[DatasetWindow]] = {}
    for w in windows:
        queues.setdefault(w.dataset, []).append(w)
    out: list[DatasetWindow] = []
    while len(out) < min(n, len(windows)):
        for q in queues.values():
            if q and len(out) < n:
                out.append(q.pop(0))
    return out


def corpus_from_dataset(ds: Mapping[str, Any], model: Mapping[str, Any] | None = None,
                        out_dir: Path | None = None) -> Corpus:
    """The run's windows as WAV clips (written once, reused) plus ``cohort.parquet`` beside them."""
    from tqdm.auto import tqdm

    splits, frame = dataset_cohort(ds, model)
    chosen = chosen_split(ds, splits)
    if ds.get("max_windows") is not None:
        chosen = reduced(chosen, int(ds["max_windows"]))
    root = Path(out_dir) if out_dir is not None else windows_dir(ds, model)
    root.mkdir(parents=True, exist_ok=True)
    C.write_manifest(frame, root / "cohort.parquet")
    clips = []
    for w in tqdm(chosen, desc=f"{ds.get('name')} windows", unit="window", disable=len(chosen) < 8):
        path = root / f"{w.window_id}.wav"
        if not path.is_file():  # atomic writes: a present file is a complete one
            write_window_wav(path, w.load())
        clips.append(Clip(w.window_id, path, w.reference if w.task == "asr" else w.text, w.dataset,
                          w.seconds, 16000))
    return Corpus(root, clips)
