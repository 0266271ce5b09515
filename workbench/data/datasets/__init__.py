"""The paper's datasets read from their own on-disk layouts (or an HF ``datasets`` copy).

``conf/dataset/<name>.yaml`` names a ``loader`` here and takes ``dataset.root=/path``. Each loader
module has ``NAME``, ``LAYOUT`` (the one line a wrong root prints), ``load(root, opts)`` for the
native layout and ``from_hf(rows, root, opts)`` for a ``save_to_disk`` folder or parquet files.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any

from workbench.data.screen import screen

from . import ami, covost2, earnings22, fleurs, gigaspeech, kespeech, librispeech, m4singer, spgispeech, spoken_squad
from .base import DatasetLayoutError, Segment, Utterance, require_dir
from .hf import hf_rows, is_hf_dir
from .parts import part_configs
from .windows import DatasetWindow, build_windows, effective_max_seconds, model_max_seconds

LOADERS: dict[str, ModuleType] = {m.NAME: m for m in (librispeech, ami, fleurs, kespeech, m4singer, covost2,
                                                      spoken_squad, gigaspeech, spgispeech, earnings22)}
TASKS = {"covost2": "translation", "spoken_squad": "qa"}
CONTIGUOUS = frozenset({"ami"})  # segments are time spans of one meeting recording


def loader(name: str) -> ModuleType:
    if name not in LOADERS:
        raise ValueError(f"dataset.loader: unknown loader {name!r}; choose one of {sorted(LOADERS)}")
    return LOADERS[name]


def load_utterances(ds: Mapping[str, Any]) -> list[Utterance]:
    """The utterances of a ``conf/dataset`` mapping: native layout, or the HF copy when that is what
    ``dataset.root`` holds."""
    mod = loader(str(ds.get("loader") or ds.get("name")))
    root = require_dir(mod.NAME, ds.get("root"), mod.LAYOUT)
    if is_hf_dir(root):
        try:
            utts = mod.from_hf(hf_rows(root, ds.get("hf_split")), root, ds)
        except KeyError as e:
            raise DatasetLayoutError(mod.NAME, root, f"HF copy lacks column {e}", mod.LAYOUT) from e
        if not utts:
            raise DatasetLayoutError(mod.NAME, root, "HF copy has no rows (check dataset.hf_split)", mod.LAYOUT)
        return utts
    return mod.load(root, ds)


def check_dataset(ds: Mapping[str, Any]) -> None:
    """Cheap check before a run starts: the root exists and holds the layout's key files (or an HF
    copy). Raises :class:`DatasetLayoutError` (a ``ConfigError``: one line). No-op for other datasets."""
    if not ds.get("loader"):
        return
    if ds["loader"] == "combined":
        for part in part_configs(ds):
            check_dataset(part)
        return
    mod = loader(str(ds["loader"]))
    root = require_dir(mod.NAME, ds.get("root"), mod.LAYOUT)
    if not is_hf_dir(root):
        mod.probe(root, ds)


def screen_dataset(ds: Mapping[str, Any]) -> None:
    """The validation pass (``workbench.data.screen``) over every part, before any run exists: with
    ``dataset.on_bad_audio=error`` one line lists every bad file; ``skip`` remembers them."""
    if not ds.get("loader"):
        return
    for part in part_configs(ds) if ds["loader"] == "combined" else [ds]:
        screen(load_utterances(part), part)


def dataset_windows(ds: Mapping[str, Any], model: Mapping[str, Any] | None = None) -> list[DatasetWindow]:
    """Complete-audio windows of the dataset under the model's audio limit (D.1.2)."""
    name = str(ds.get("loader") or ds.get("name"))
    win = dict(ds.get("window") or {})
    task = str(ds.get("task") or TASKS.get(name, "asr"))
    utts = screen(load_utterances(ds), ds)  # one validation pass: bad files stop the run or are skipped
    # HF copies of AMI hold each segment as its own clip: those windows concatenate instead
    spans = all(len(u.segments) == 1 and u.segments[0].data is None for u in utts)
    return build_windows(name, utts, task=task, mode=str(win.get("mode", "pack")),
                         max_seconds=effective_max_seconds(win.get("max_seconds", 60.0), model),
                         min_seconds=float(win.get("min_seconds", 0.0)), contiguous=name in CONTIGUOUS and spans)


__all__ = ["LOADERS", "DatasetLayoutError", "check_dataset", "screen_dataset",
           "DatasetWindow", "Segment", "Utterance", "build_windows",
           "dataset_windows", "effective_max_seconds", "load_utterances", "loader", "model_max_seconds"]
