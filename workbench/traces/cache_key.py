"""The identity of a trace cache: a content hash of everything that determines its contents.

A key of ``model.name`` alone would let ``model.max_new_tokens=50`` or
``model.drafter.quantize=null`` silently replay the default run's traces. The key covers, for
every model role that produces a trace row:

* the weights' identity -- sha256 of the weight files (local dir), the offline package's
  ``model.bin`` sha256 + distribution version + converter version (plus the converted files'
  sha256 when they were edited in the cache after conversion), or the hub id + revision;
* quantization, engine (library and versions) and precision (dtype, device);
* the prompt (any prompt/instruction/language/task field) and the output cap;
* the corpus version and the window definition (how a clip becomes a window);
* the code schema version (trace schema + this key's own layout).

``trace_key`` returns the material and its digest; the digest names the cache folder and is
logged as the run param ``trace_cache_key``. Each window's manifest also records its clip's audio
sha256, so a re-synthesized clip re-collects just that window.

File hashes (``workbench.io.file_sha256``) are memoized in ``<cache>/hashes.json`` by (path, size,
mtime, inode, ctime): hashing 300 MB of weights once per job would cost seconds; a changed file has a
new size, mtime, inode or change time (an edit that restores size and mtime still moves the change time).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from workbench.io import dir_sha256, file_sha256
from workbench.traces.schema import SCHEMA_VERSION

__all__ = ["TraceKey", "cap_of", "dir_sha256", "file_sha256", "trace_key", "weights_identity"]

KEY_VERSION = 1  # bump when the key's material changes layout
COLLECTOR_VERSION = 1  # bump when traces.collect changes what it records
ROLES = ("target", "drafter", "serial_drafter")
MODEL_FIELDS = ("family", "dtype", "device", "quantize", "kernels", "vocabulary", "engine", "mnn", "batch_tokens")
PROMPT_FIELDS = ("prompt", "instruction", "system_prompt", "language", "task")
# How the demo turns a corpus clip into a window: the whole clip, mono float32 at 16 kHz, <= 30 s.
WINDOW_DEFINITION = "whole-clip/mono/16000Hz/max30s"


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def weights_identity(block: Mapping[str, Any]) -> dict[str, Any]:
    """Which weights a model block resolves to, in ``registry.resolve_weights``'s order.

    Never converts or downloads: the identity comes from the source files themselves.
    """
    local = block.get("local_path")
    if local and (Path(local).expanduser() / "config.json").is_file():
        return {"source": "local_path", "sha256": dir_sha256(Path(local).expanduser())}
    pkg_name = block.get("offline_package")
    if pkg_name:
        from workbench.models.offline import PACKAGES

        pkg = PACKAGES.get(pkg_name)
        parts = pkg.model_bin_parts() if pkg else None
        if pkg is not None and parts is not None:
            from workbench.models.whisper_convert import FORMAT_VERSION, edited_conversion

            ident = {"source": "offline_package", "package": pkg_name,
                     "versions": {d: _dist_version(d) for d in pkg.pip},
                     "model_bin_sha256": [file_sha256(p) for p in parts], "converter": FORMAT_VERSION}
            edited = edited_conversion(pkg)  # converted weights changed in the cache since conversion
            return ident if edited is None else {**ident, "converted_sha256": edited}
    if block.get("hub_id"):
        return {"source": "hub", "hub_id": block["hub_id"], "revision": block.get("revision") or "unpinned"}
    return {"source": "none"}


def engine_identity() -> dict[str, Any]:
    """Library versions that compute the traces (a different torch can change a greedy argmax)."""
    return {"engine": "transformers", "transformers": _dist_version("transformers"), "torch": _dist_version("torch")}


def model_material(block: Mapping[str, Any]) -> dict[str, Any]:
    out = {f: block.get(f) for f in MODEL_FIELDS if f in block}
    out.update({f: block.get(f) for f in PROMPT_FIELDS if block.get(f) is not None})
    out["weights"] = weights_identity(block)
    return out


def _hash(material: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class TraceKey:
    material: dict[str, Any]
    digest: str

    @property
    def short(self) -> str:
        return self.digest[:16]

    def diff(self, other: Mapping[str, Any]) -> list[str]:
        """Dotted paths whose values differ from ``other`` (an older key's material)."""
        return sorted(_diff(self.material, dict(other)))


def _diff(a: Any, b: Any, prefix: str = "") -> set[str]:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out: set[str] = set()
        for k in set(a) | set(b):
            out |= _diff(a.get(k), b.get(k), f"{prefix}{k}.")
        return out
    return set() if a == b else {f"{prefix.rstrip('.')}: {b!r} -> {a!r}"}


def trace_key(model: Mapping[str, Any], dataset: Mapping[str, Any], *, cap: int, asp_cap: int,
              corpus_version: str, window_definition: str = WINDOW_DEFINITION) -> TraceKey:
    """Key of the traces collected for model pair ``model`` on ``dataset``'s corpus.

    ``cap`` is the effective output cap (``max_new_tokens`` bounded by the target's positions).
    """
    roles = {r: model_material(model[r]) for r in ROLES if model.get(r)}
    material = {
        "key_version": KEY_VERSION,
        "schema_version": SCHEMA_VERSION,
        "collector_version": COLLECTOR_VERSION,
        "engine": {**engine_identity(), "pair_engine": model.get("engine") or "torch", "mnn": model.get("mnn")},
        "models": roles,
        "external_sources": sorted(model.get("external_sources") or []),
        "prompt": {f: model.get(f) for f in PROMPT_FIELDS if model.get(f) is not None},
        "cap": int(cap),
        "asp_cap": int(asp_cap),
        "corpus": {"version": corpus_version, "name": dataset.get("name"),
                   "synthetic": bool(dataset.get("synthetic", False))},
        "window_definition": window_definition,
    }
    return TraceKey(material, _hash(material))


def cap_of(model: Mapping[str, Any], max_target_positions: int, prompt_len: int) -> int:
    """The effective output cap: ``max_new_tokens`` bounded by the target's position table."""
    return min(int(model.get("max_new_tokens", 224)), max_target_positions - prompt_len)
