"""Qwen decoder LMs on ``MNN.llm``: llmexport export (cached per weights hash) and a Target / Drafter.

Facts this module relies on (measured on MNN 3.6.1 / llmexport 0.0.5; see ARCHITECTURE.md, DESIGN notes):

* ``set_config({"all_logits": True})`` before ``load()`` makes ``forward(ids)`` return ``[1, K, V]``:
  one call verifies K tokens (the paper's width-K verification).
* ``llm._c_obj.erase_history(n_keep, 0)`` rolls the KV cache back to its first ``n_keep`` entries;
  editing context fields does not.
* Every ``Var`` returned by ``forward`` must be dropped before its ``Llm`` is destroyed (segfault
  otherwise), so results are copied to numpy at once and the Var is deleted in the same call.
* llmexport's console script is broken: its modules import ``utils.*`` as top-level packages, so its
  folder goes on ``sys.path``. Its converter fallback imports ``MNN.tools.mnnconvert``, whose import
  pip-installs packages and uploads telemetry; we put an in-process ``_tools.mnnconvert`` in its place.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from workbench.decoding.protocols import Proposal
from workbench.errors import ModelError
from workbench.models.cache import atomic_dir, cache_root
from workbench.models.mnn.runtime import WHY_NOT, MnnSettings

# families whose MNN.llm export works here (text Qwen3); the audio families are refused with the reason
SUPPORTED = ("qwen3",)
REFUSED = dict(WHY_NOT)  # qwen3_asr: no exporter; qwen2_audio / omni: llmexport fails on transformers 5
ALIASES = {"qwen2_5_omni_thinker": "qwen2_5_omni"}  # config.json model_type -> conf/model family
EXPORT_VERSION = "1"  # bump when export arguments change: old cache entries stop matching
_WEIGHT_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


class MnnLlmError(ModelError):
    """One line naming the model / file and what to do."""


def refuse(family: str) -> None:
    """Raise the one clear line for a family MNN.llm cannot run here (never a silent torch fallback)."""
    if family in REFUSED:
        raise MnnLlmError(f"engine mnn: cannot run {family}: {REFUSED[family]}")
    if family not in SUPPORTED:
        raise MnnLlmError(f"engine mnn: unknown LM family {family!r}; MNN.llm runs {', '.join(SUPPORTED)}")


def _family(model_dir: Path) -> str:
    try:
        return str(json.loads((model_dir / "config.json").read_text())["model_type"])
    except (OSError, ValueError, KeyError) as err:
        raise MnnLlmError(f"{model_dir / 'config.json'}: unreadable model config ({err}); "
                          "pass a saved transformers model folder") from None


def weights_hash(model_dir: Path) -> str:
    h = hashlib.sha256(EXPORT_VERSION.encode())
    for name in _WEIGHT_FILES:
        p = model_dir / name
        if p.is_file():
            h.update(name.encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


@contextmanager
def _in_process_converter() -> Iterator[None]:
    """For the block, ``MNN.tools`` is a stub whose ``mnnconvert.main`` runs ``_tools.mnnconvert``.

    Importing the real ``MNN.tools`` package runs ``pip install aliyun-log-python-sdk`` and starts
    telemetry (MNN/tools/utils/log.py). llmexport also leaves ``sys.argv = []`` behind, which breaks
    the next ``argparse`` parser in this process, so ``sys.argv`` is restored too.
    """
    import _tools  # MNN's converter extension, shipped in the MNN wheel

    convert = types.ModuleType("MNN.tools.mnnconvert")
    convert.main = lambda: _tools.mnnconvert(list(sys.argv))  # llmexport puts the converter args in sys.argv
    tools = types.ModuleType("MNN.tools")
    tools.__path__ = []
    tools.mnnconvert = convert
    names = ("MNN.tools", "MNN.tools.mnnconvert")
    saved = {n: sys.modules.get(n) for n in names}
    argv = list(sys.argv)
    sys.modules.update(zip(names, (tools, convert), strict=True))
    try:
        yield
    finally:
        sys.argv = argv
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m


def _llmexport() -> types.ModuleType:
    """llmexport's exporter module, loaded from its file with its folder on ``sys.path``."""
    import importlib.util

    spec = importlib.util.find_spec("llmexport")
    if spec is None or not spec.submodule_search_locations:
        raise MnnLlmError("llmexport is not installed; pip install llmexport==0.0.5 (the mnn extra)")
    folder = Path(next(iter(spec.submodule_search_locations)))
    if str(folder) not in sys.path:
        sys.path.append(str(folder))  # its modules import ``utils.*`` as a top-level package
    if "_as2d_llmexport" not in sys.modules:
        mod_spec = importlib.util.spec_from_file_location("_as2d_llmexport", folder / "llmexport.py")
        module = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(module)
        sys.modules["_as2d_llmexport"] = module
    return sys.modules["_as2d_llmexport"]


def run_llmexport(model_dir: Path, dst: Path) -> None:
    """llmexport 0.0.5 with float weights, converter in-process; a failure is one MnnLlmError line."""
    err = io.StringIO()
    try:
        with _in_process_converter(), contextlib.redirect_stderr(err):
            _llmexport().export(str(model_dir), dst_path=str(dst), export="mnn", quant_bit=16,
                                mnnconvert="/nonexistent/MNNConvert")  # no binary: use the (stubbed) pymnn path
    except SystemExit:  # llmexport's spinner prints the traceback and calls exit(1)
        lines = [ln.strip() for ln in err.getvalue().splitlines() if ln.strip()]
        raise MnnLlmError(f"llmexport 0.0.5 failed on {model_dir}: {lines[-1] if lines else 'exit 1'}") from None


def export_llm(model_dir: str | Path, *, force: bool = False) -> Path:
    """Export a saved Qwen LM folder with llmexport (fp weights, no quantization) into the cache.

    Returns the export folder (holding ``config.json`` for ``MNN.llm.create``). Cached per weights hash
    under ``$AS2D_CACHE/mnn_llm``; written atomically, so a crash never leaves a loadable half export.
    """
    model_dir = Path(model_dir)
    family = ALIASES.get(_family(model_dir), _family(model_dir))
    refuse(family)
    out = cache_root() / "mnn_llm" / f"{family}-{weights_hash(model_dir)}"
    if (out / "config.json").is_file() and (out / "llm.mnn").is_file() and not force:
        return out
    with atomic_dir(out) as tmp, contextlib.redirect_stdout(io.StringIO()):
        # quant_bit 16 keeps float weights: the MNN target is exact against itself at any precision,
        # but int4 would make the tiny test models' logits near-ties
        run_llmexport(model_dir, Path(tmp))
        if not (Path(tmp) / "llm.mnn").is_file():
            raise MnnLlmError(f"llmexport wrote no llm.mnn for {model_dir}; see {Path(tmp) / '.export.log'}")
    return out


def load_llm(export: str | Path, settings: MnnSettings | None = None) -> Any:
    """An ``MNN.llm`` model with all-position logits, loaded from an export folder."""
    import MNN.llm as mnn_llm

    export = Path(export)
    cfg = export / "config.json"
    for name in ("config.json", "llm.mnn", "llm.mnn.weight"):
        if not (export / name).is_file():
            raise MnnLlmError(f"MNN.llm export missing: {export / name}; re-export with "
                              "workbench.models.mnn.llm.export_llm(<model folder>, force=True)")
    s = settings or MnnSettings()
    llm = mnn_llm.create(str(cfg))
    llm.set_config({"all_logits": True, "thread_num": s.threads, "precision": s.precision.lower(),
                    "memory": s.memory.lower(), "backend_type": s.backend_key})
    llm.load()
    return llm


class LlmSession:
    """The KV state of one ``MNN.llm`` model: forward K ids, roll back to n entries."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.entries = 0
        llm.reset()  # a new session starts with an empty KV, whatever the Llm ran before

    def forward(self, ids: Sequence[int]) -> np.ndarray:
        v = self.llm.forward([int(t) for t in ids])
        try:
            logits = np.array(v.read(), dtype=np.float32).reshape(len(ids), -1)
        finally:
            del v  # a Var outliving its Llm segfaults
        self.entries += len(ids)
        return logits

    def rollback(self, n_keep: int) -> None:
        if not 0 <= n_keep <= self.entries:
            raise ValueError(f"rollback: n_keep={n_keep} outside [0, {self.entries}]")
        if n_keep < self.entries:
            # applied lazily by MNN at the next forward; a later call overrides it (n_keep only shrinks)
            self.llm._c_obj.erase_history(n_keep, 0)
        self.entries = n_keep


class MnnLlmTarget:
    """``Target`` over an ``MNN.llm`` decoder LM: width-K verify in one forward, rollback by erase_history."""

    def __init__(self, llm: Any, prompt_ids: Sequence[int], eos_id: int | None, vocab_size: int) -> None:
        if not prompt_ids:
            raise ValueError("MnnLlmTarget: prompt_ids is empty; the target needs a fixed input to prefill")
        self.session = LlmSession(llm)
        self.prompt = [int(t) for t in prompt_ids]
        self.eos_id = eos_id
        self.vocab_size = vocab_size
        self.last_logits: np.ndarray | None = None
        self._width = 0

    @property
    def committed_entries(self) -> int:
        return self.session.entries - len(self.prompt)

    def prefill(self) -> int:
        self.session.rollback(0)
        logits = self.session.forward(self.prompt)
        return int(np.argmax(logits[-1]))

    def verify(self, root: int, chain: Sequence[int]) -> list[int]:
        ids = [root, *chain]
        self.last_logits = self.session.forward(ids)
        self._width = len(ids)
        return [int(t) for t in np.argmax(self.last_logits, axis=-1)]

    def keep(self, n_accepted: int) -> None:
        if not 0 <= n_accepted < self._width:
            raise ValueError(f"keep: n_accepted={n_accepted} outside [0, {self._width - 1}]")
        self.session.rollback(self.session.entries - self._width + 1 + n_accepted)
        self._width = 0


class MnnLlmDrafter:
    """Prefix-conditioned greedy drafter on ``MNN.llm`` (SD / ASP): keeps its own KV on the longest
    common prefix with the committed prefix and catches up the missing tokens in one forward."""

    def __init__(self, llm: Any, prompt_ids: Sequence[int]) -> None:
        self.session = LlmSession(llm)
        self.prompt = [int(t) for t in prompt_ids]
        self._seen: list[int] = []  # decoded tokens processed into the KV after the prompt
        self._next: np.ndarray = self.session.forward(self.prompt)[-1]

    def propose(self, prefix: Sequence[int], n: int, stop_below: float | None = None) -> Proposal:
        prefix = [int(t) for t in prefix]
        if not prefix:
            raise ValueError("propose: prefix is empty; it always holds the known root")
        common = 0
        for a, b in zip(self._seen, prefix, strict=False):
            if a != b:
                break
            common += 1
        forwards = catchup = 0
        if not common == len(self._seen) == len(prefix):
            # keep at most len(prefix) - 1 entries: the last prefix token's row is the next-token logits
            keep = min(common, len(prefix) - 1)
            self.session.rollback(len(self.prompt) + keep)
            missing = prefix[keep:]
            self._next = self.session.forward(missing)[-1]
            self._seen = list(prefix)
            forwards, catchup = 1, len(missing)
        tokens: list[int] = []
        confs: list[float] = []
        for _ in range(n):
            row = self._next
            tok = int(np.argmax(row))
            p = np.exp(row - row.max())
            conf = float(p[tok] / p.sum())
            tokens.append(tok)
            confs.append(conf)
            if len(tokens) == n or (stop_below is not None and conf < stop_below):
                break
            self._next = self.session.forward([tok])[-1]
            self._seen.append(tok)
            forwards += 1
        return Proposal(tuple(tokens), tuple(confs), forwards, catchup)
