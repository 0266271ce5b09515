"""A trace cache that is never stale and heals itself.

The folder is named by the content key (``<pair>-<key[:16]>``, see ``traces.cache_key``) and holds
``key.json`` with the full key material. Every window is validated on load -- manifest JSON, the
parquet's readability, schema and content (``schema.check_content``), the manifest's cache key and
the clip's audio hash. A window that fails is moved to ``<root>/quarantine/`` with a reason file,
a warning names the file and the problem, and the window is collected again. Nothing is reused on
the strength of "the files exist".

When the key differs from an earlier cache of the same pair, the new folder is announced with
the fields that changed, so a rerun with ``model.max_new_tokens=50`` says why it re-collects.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

import polars as pl

from workbench.io import atomic_write_json, clean_temps
from workbench.traces.cache_key import TraceKey
from workbench.traces.schema import TraceSchemaError, read_window

log = logging.getLogger(__name__)
KEY_FILE = "key.json"
QUARANTINE = "quarantine"


class TraceCache:
    """The validated trace folder of one (model pair, corpus, cap, code) key."""

    def __init__(self, root: str | Path, name: str, key: TraceKey) -> None:
        self.root = Path(root)
        self.name = name
        self.key = key
        self.dir = self.root / f"{name}-{key.short}"
        self._valid: dict[str, pl.DataFrame] = {}
        self.announcements: list[str] = []

    def open(self) -> TraceCache:
        """Create the folder and its ``key.json``; announce a key change against older folders."""
        stored = self._stored_key(self.dir)
        if stored is not None and stored.get("digest") != self.key.digest:
            # a 64-bit prefix collision, or a hand-edited folder: never trust it
            self._quarantine_dir(f"key.json digest {stored.get('digest')} != {self.key.digest}")
        if not self.dir.is_dir() or self._stored_key(self.dir) is None:
            self._announce_change()
            self.dir.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.dir / KEY_FILE, {"digest": self.key.digest, "material": self.key.material},
                              sort_keys=True, default=str)
        clean_temps(self.dir)
        return self

    @staticmethod
    def _stored_key(d: Path) -> dict[str, Any] | None:
        try:
            data = json.loads((d / KEY_FILE).read_text())
            return data if isinstance(data, dict) else None
        except (OSError, ValueError):
            return None

    def _announce_change(self) -> None:
        older = [d for d in self.root.glob(f"{self.name}-*") if d.is_dir() and d != self.dir]
        if not older:
            return
        newest = max(older, key=lambda d: d.stat().st_mtime)
        stored = self._stored_key(newest)
        what = (", ".join(self.key.diff(stored.get("material", {}))[:8]) if stored
                else f"{newest.name} predates content keys")
        msg = (f"trace cache {self.name}: key changed ({what}); collecting fresh traces into {self.dir} "
               f"instead of reusing {newest}")
        self.announcements.append(msg)
        log.warning(msg)

    def manifest_fields(self, audio_sha256: str | None) -> dict[str, Any]:
        """What ``collect`` writes into each window's manifest so ``check`` can recognise it."""
        return {"cache_key": self.key.digest, "audio_sha256": audio_sha256}

    def problem(self, window_id: str, audio_sha256: str | None = None, vocab_size: int | None = None) -> str | None:
        """Why window ``window_id`` cannot be reused, or ``None`` if it is valid (then kept in memory)."""
        try:
            df, meta = read_window(self.dir, window_id, vocab_size)
        except TraceSchemaError as err:
            return str(err)
        where = self.dir / f"{window_id}.json"
        if meta.get("cache_key") != self.key.digest:
            return f"{where}: cache_key {meta.get('cache_key')!r} is not this cache's {self.key.short}"
        if audio_sha256 is not None and meta.get("audio_sha256") != audio_sha256:
            return f"{where}: the clip's audio changed since this window was collected"
        self._valid[window_id] = df
        return None

    def ready(self, window_id: str, audio_sha256: str | None = None, vocab_size: int | None = None) -> bool:
        """True if the window is valid; a damaged or foreign entry is quarantined (and said so)."""
        if window_id in self._valid:
            return True
        files = [self.dir / f"{window_id}.json", self.dir / f"{window_id}.parquet"]
        if not any(f.exists() for f in files):
            return False
        problem = self.problem(window_id, audio_sha256, vocab_size)
        if problem is None:
            return True
        dest = self.quarantine(window_id, problem)
        msg = f"trace cache: {problem}; moved the entry to {dest} and re-collecting window {window_id}"
        self.announcements.append(msg)
        log.warning(msg)
        return False

    def frame(self, window_id: str) -> pl.DataFrame:
        """The validated trace table (call ``ready`` first, or after collecting)."""
        if window_id not in self._valid:
            problem = self.problem(window_id)
            if problem is not None:
                raise TraceSchemaError(problem)
        return self._valid[window_id]

    def quarantine(self, window_id: str, reason: str) -> Path:
        dest = self.root / QUARANTINE / self.dir.name / f"{window_id}.{time.strftime('%Y%m%dT%H%M%S')}.{id(self):x}"
        dest.mkdir(parents=True, exist_ok=True)
        for suffix in (".json", ".parquet"):
            src = self.dir / f"{window_id}{suffix}"
            if src.exists():
                shutil.move(str(src), dest / src.name)
        (dest / "reason.txt").write_text(reason + "\n")
        self._valid.pop(window_id, None)
        return dest

    def _quarantine_dir(self, reason: str) -> None:
        dest = self.root / QUARANTINE / f"{self.dir.name}.{time.strftime('%Y%m%dT%H%M%S')}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(self.dir), dest)
        (dest / "reason.txt").write_text(reason + "\n")
        log.warning("trace cache: %s: %s; moved to %s", self.dir, reason, dest)


def open_trace_cache(root: str | Path, name: str, model: dict[str, Any], dataset: dict[str, Any], *, cap: int,
                     asp_cap: int, corpus_version: str) -> TraceCache:
    """Key the traces of ``model`` on ``dataset`` (see ``cache_key.trace_key``), open the folder,
    and record the key as the run param ``trace_cache_key.<name>`` when a run is active."""
    from workbench.traces.cache_key import trace_key
    from workbench.tracking import log_param_if_tracking

    key = trace_key(model, dataset, cap=cap, asp_cap=asp_cap, corpus_version=corpus_version)
    cache = TraceCache(root, name, key).open()
    log_param_if_tracking(f"trace_cache_key.{name}", key.digest)
    return cache
