"""A sweep's target-only replays: computed once per device and data, reused by the sweep's other jobs.

Target-only's rows do not depend on what a budget/method sweep varies, so under ``-m`` the first job to
need them replays them and stores them in the sweep directory (``<sweep dir>/target_only/``); every
other job of the sweep reads them back and says so in one line, naming the entry and the run that
replayed it. An entry is keyed on everything that changes the rows:

* the device profile's content (every comparable field, after the model pair's cost block is applied);
* each window's target-facing content (id, dataset, greedy reference, EOS, vocabulary, output cap,
  synthetic flag) -- target-only reads no drafts and no candidate sources;
* the target's identity (``model.name`` and the ``model.target`` block);
* the target-only configuration (scheme and settings) and the replay code (a hash of the sources of
  ``workbench/decoding``, ``workbench/replay``, ``workbench/metrics.py`` and the evaluation loop).

A change of any one is a new key, replayed afresh. Entries are written under an exclusive ``flock``
(joblib workers run jobs in parallel; a job that dies holding it releases it) and marked complete by
``entry.json``, written last. Reused rows are audited again: each window's stored committed output
must equal this job's greedy reference token for token (``audit_exact``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from tqdm import tqdm

import workbench
from workbench.decoding import audit_exact
from workbench.io import atomic_write_json, atomic_write_parquet
from workbench.replay.profile import DeviceProfile
from workbench.replay.result import ReplayConfig
from workbench.replay.trajectory import Window

STORE_VERSION = 1  # bump when an entry's files change layout
STORE_DIR = "target_only"
CODE_DIRS = ("decoding", "replay")  # what runs and prices a target-only replay
CODE_FILES = ("metrics.py", "jobs/evaluate.py", "jobs/sweep_baseline.py")
WINDOW_FIELDS = ("window_id", "dataset", "reference", "eos_id", "vocab_size", "max_output", "synthetic")
FRAMES = ("windows", "rounds", "stages")


@dataclass(frozen=True)
class ConfigRows:
    """One configuration's replayed rows on one device: per-window, per-round and per-stage frames,
    and each window's committed output (the exactness audit's input)."""

    windows: pl.DataFrame
    rounds: pl.DataFrame | None
    stages: pl.DataFrame | None
    outputs: Mapping[str, tuple[int, ...]]


@dataclass(frozen=True)
class BaselineKey:
    digest: str
    material: dict[str, Any]

    @property
    def short(self) -> str:
        return self.digest[:16]


@dataclass(frozen=True)
class Reuse:
    """Where one device's target-only rows came from: replayed by this job, or read from ``path``."""

    device: str
    key: str
    path: Path
    computed_by: str  # the MLflow run (or job directory) that replayed them
    reused: bool

    def line(self, n_windows: int) -> str:
        if self.reused:
            return (f"target-only on {self.device}: reused {n_windows} windows replayed by {self.computed_by} "
                    f"from {self.path} (same profile, windows, target and replay code; key {self.key})")
        return f"target-only on {self.device}: replayed here, kept for this sweep's other jobs in {self.path}"


def canonical(value: Any) -> Any:
    """A JSON-ready form of a profile (or any frozen value): every compared dataclass field, mappings sorted."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value) if f.compare}
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, (set, frozenset)):  # sorted: a set's order changes from process to process
        return sorted((canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, np.ndarray):
        return value.tolist()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


@functools.cache
def replay_code() -> str:
    """sha256 of the code that replays and prices target-only (the decoding core, replay, metrics, this loop)."""
    root = Path(workbench.__file__).resolve().parent
    files = sorted(p for d in CODE_DIRS for p in (root / d).rglob("*.py")) + [root / f for f in CODE_FILES]
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def windows_digest(windows: Sequence[Window]) -> str:
    h = hashlib.sha256()
    for w in windows:
        h.update(json.dumps([canonical(getattr(w, f)) for f in WINDOW_FIELDS]).encode() + b"\n")
    return h.hexdigest()


def baseline_key(windows: Sequence[Window], profile: DeviceProfile, config: ReplayConfig,
                 target: Mapping[str, Any]) -> BaselineKey:
    material = {
        "store_version": STORE_VERSION,
        "replay_code": replay_code(),
        "config": {"scheme": config.scheme, "settings": canonical(config.settings)},
        "profile": hashlib.sha256(json.dumps(canonical(profile), sort_keys=True).encode()).hexdigest(),
        "windows": windows_digest(windows),
        "n_windows": len(windows),
        "target": canonical(target),
    }
    return BaselineKey(hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest(), material)


@contextlib.contextmanager
def _locked(path: Path, waiting: Callable[[], None]) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another job of the sweep is replaying this entry: wait for it
            waiting()
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class BaselineStore:
    """Target-only rows of one sweep, one entry per key under ``root`` (``<sweep dir>/target_only``)."""

    def __init__(self, root: Path, who: str, say: Callable[[str], None] = tqdm.write) -> None:
        self.root, self.who, self.say = Path(root), who, say  # tqdm.write: a line between progress bars

    def entry(self, device: str, key: BaselineKey) -> Path:
        return self.root / f"{device}-{key.short}"

    def rows(self, windows: Sequence[Window], profile: DeviceProfile, key: BaselineKey,
             compute: Callable[[], ConfigRows]) -> tuple[ConfigRows, Reuse]:
        """This key's rows: read back (and audited against ``windows``) if a job of the sweep stored them,
        else ``compute()``d here and stored. One line on the console either way."""
        entry = self.entry(profile.name, key)
        waiting = functools.partial(self.say, f"target-only on {profile.name}: waiting for another job of "
                                              f"this sweep replaying it ({entry})")
        with _locked(self.root / f".{entry.name}.lock", waiting):
            meta = entry / "entry.json"
            if meta.is_file():
                info = json.loads(meta.read_text())
                rows = _load(entry)
                audit_reused(rows, windows, profile.name, entry)
                reuse = Reuse(profile.name, key.short, entry, str(info["computed_by"]), True)
            else:
                rows = compute()
                _save(entry, rows)
                atomic_write_json(meta, {"digest": key.digest, "material": key.material, "computed_by": self.who,
                                         "device": profile.name, "windows": len(windows)}, indent=1)
                reuse = Reuse(profile.name, key.short, entry, self.who, False)
        self.say(reuse.line(len(windows)))
        return rows, reuse


def audit_reused(rows: ConfigRows, windows: Sequence[Window], device: str, entry: Path) -> None:
    """Exactness of reused rows: the same windows, each stored output equal to this job's greedy reference."""
    want = [w.window_id for w in windows]
    if sorted(rows.outputs) != sorted(want) or sorted(rows.windows["window_id"].to_list()) != sorted(want):
        raise ValueError(f"{entry}: stored target-only windows differ from this job's {len(want)} windows")
    for w in windows:
        audit_exact(rows.outputs[w.window_id], w.reference,
                    label=f"window {w.window_id!r}, target-only on {device} reused from {entry}")


def _save(entry: Path, rows: ConfigRows) -> None:
    atomic_write_parquet(entry / "outputs.parquet", pl.DataFrame(
        {"window_id": list(rows.outputs), "output": [list(v) for v in rows.outputs.values()]},
        schema={"window_id": pl.String, "output": pl.List(pl.Int64)}))
    for name in FRAMES:
        frame = getattr(rows, name)
        if frame is not None:
            atomic_write_parquet(entry / f"{name}.parquet", frame)


def _load(entry: Path) -> ConfigRows:
    frames = {n: pl.read_parquet(entry / f"{n}.parquet") if (entry / f"{n}.parquet").is_file() else None
              for n in FRAMES}
    out = pl.read_parquet(entry / "outputs.parquet")
    outputs = {str(w): tuple(o) for w, o in zip(out["window_id"], out["output"], strict=True)}
    windows = frames.pop("windows")
    assert windows is not None  # written with every entry
    return ConfigRows(windows, frames["rounds"], frames["stages"], outputs)


def sweep_store() -> BaselineStore | None:
    """The store of this job's sweep (``<hydra.sweep.dir>/target_only``); ``None`` outside a multirun."""
    from workbench.tracking.sweep import sweep_dir

    root = sweep_dir()
    if root is None:
        return None
    return BaselineStore(root / STORE_DIR, _who())


def _who() -> str:
    """This job, as another job names it: its MLflow run, else its Hydra output directory."""
    import mlflow
    from hydra.core.hydra_config import HydraConfig

    run = mlflow.active_run()
    if run is not None:
        return f"run {run.info.run_id}"
    try:
        return f"job {HydraConfig.get().runtime.output_dir}"
    except ValueError:
        return "an earlier job"


__all__ = ["BaselineKey", "BaselineStore", "ConfigRows", "Reuse", "audit_reused", "baseline_key", "canonical",
           "replay_code", "sweep_store", "windows_digest"]
