"""Export a transformers Whisper dir to MNN: encoder (-> cross KV) and a K-wide decoder step.

``torch.onnx.export(dynamo=False, opset 17)`` with K and P dynamic, then MNN's converter called
in-process (``_tools.mnnconvert``; the ``mnnconvert`` console script pip-installs and uploads
telemetry). ``--useGeluApproximation 0`` keeps exact GELU: with the default the logits drift by
~0.09 (shared/DESIGN.md, "Whisper on MNN is feasible").

Exports are cached per weights hash under ``$AS2D_CACHE/mnn/``, written atomically, and carry a
manifest (sizes + sha256) so a missing or corrupt file is one error naming it and the command that
re-exports: ``python -m workbench.models.mnn.export MODEL_DIR --force``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

from workbench.errors import ModelError
from workbench.models.cache import atomic_dir, cache_root

FORMAT_VERSION = 1  # bump when the graphs, the converter flags or the layout change
MANIFEST = "as2d_mnn.json"
ENCODER, DECODER = "encoder.mnn", "decoder.mnn"
ENC_IN, ENC_OUT = ("features",), ("cross_k", "cross_v")
DEC_IN = ("tokens", "positions", "past_k", "past_v", "cross_k", "cross_v")
DEC_OUT = ("logits", "new_k", "new_v")
SIDE_FILES = ("config.json", "as2d_whisper.json", "tokenizer.json")  # what the runtime reads besides .mnn
QUANTS = (None, "int8")  # int8: weight-only int8 (with mnn.memory=low MNN computes in dynamic int8)


class MnnExportError(ModelError):
    """A missing or corrupt MNN export: names the file and the command that re-exports it."""


def _sha256(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _memo_sha256(path: Path) -> str:
    """sha256 of a big file, memoised beside the exports by (path, size, mtime_ns): the weights of
    base hash in ~1 s, and every process that opens a model would pay it again."""
    st = path.stat()
    if st.st_size < 1 << 20:
        return _sha256(path)
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    memo_path = cache_root() / "mnn" / "sha256-memo.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    if key not in memo:
        memo[key] = _sha256(path)
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo_path.with_name(f".{memo_path.name}.{os.getpid()}.{uuid.uuid4().hex}")
        tmp.write_text(json.dumps(memo))
        os.replace(tmp, memo_path)  # last writer wins: entries are facts, losing one only costs a rehash
    return memo[key]


def weights_hash(model_dir: str | Path) -> str:
    """Hash of everything in a transformers Whisper dir that changes the exported graphs."""
    model_dir = Path(model_dir)
    files = sorted(model_dir.glob("*.safetensors")) + [model_dir / n for n in SIDE_FILES]
    h = hashlib.sha256()
    for f in files:
        if f.is_file():
            h.update(f.name.encode())
            h.update(_memo_sha256(f).encode())
    return h.hexdigest()[:16]


def export_dir(model_dir: str | Path, quant: str | None = None) -> Path:
    model_dir = Path(model_dir)
    tag = f"{model_dir.name}-{weights_hash(model_dir)}-v{FORMAT_VERSION}" + (f"-{quant}" if quant else "")
    return cache_root() / "mnn" / tag


def reexport_command(model_dir: str | Path, quant: str | None = None) -> str:
    q = f" --quant {quant}" if quant else ""
    return f"python -m workbench.models.mnn.export {model_dir}{q} --force"


def check_export(out: Path, model_dir: str | Path | None = None, quant: str | None = None) -> dict:
    """The export's manifest, after checking every file it lists (size, and sha256 memoised by size and mtime)."""
    cmd = reexport_command(model_dir or "MODEL_DIR", quant)
    man_path = out / MANIFEST
    try:
        manifest = json.loads(man_path.read_text())
        files = manifest["files"]
    except FileNotFoundError:
        raise MnnExportError(f"MNN export missing: {man_path} does not exist; re-export with: {cmd}") from None
    except (ValueError, KeyError, TypeError) as err:
        raise MnnExportError(f"MNN export corrupt: {man_path} is unreadable ({err}); re-export with: {cmd}") from None
    for name, facts in files.items():
        path = out / name
        if not path.is_file():
            raise MnnExportError(f"MNN export missing: {path} does not exist; re-export with: {cmd}")
        if path.stat().st_size != facts["size"] or _memo_sha256(path) != facts["sha256"]:
            raise MnnExportError(f"MNN export corrupt: {path} does not match its manifest (size/sha256); "
                                 f"re-export with: {cmd}")
    return manifest


@contextmanager
def _quiet_fds(log: Path):
    """Send C-level stdout/stderr (the converter's chatter) to ``log`` for the block."""
    saved = [os.dup(1), os.dup(2)]
    with open(log, "ab") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def convert_onnx(onnx_path: Path, mnn_path: Path, quant: str | None = None) -> None:
    """ONNX -> MNN with MNN's converter in-process; exact GELU; optional weight-only int8."""
    import _tools  # MNN's converter extension, shipped in the MNN wheel

    args = ["mnnconvert", "-f", "ONNX", "--modelFile", str(onnx_path), "--MNNModel", str(mnn_path),
            "--bizCode", "as2d", "--useGeluApproximation", "0"]
    if quant == "int8":
        args += ["--weightQuantBits", "8"]
    log = mnn_path.with_suffix(".log")
    with _quiet_fds(log):
        _tools.mnnconvert(args)
    if not mnn_path.is_file() or mnn_path.stat().st_size == 0:
        tail = log.read_text(errors="replace")[-2000:] if log.is_file() else ""
        raise MnnExportError(f"MNN converter produced no {mnn_path.name} from {onnx_path.name}:\n{tail}")
    log.unlink(missing_ok=True)


def _export_onnx(model, folder: Path) -> tuple[Path, Path, dict]:
    import torch

    from workbench.models.mnn.graph import DecoderStep, EncoderKV

    cfg = model.config
    heads, head_dim = cfg.decoder_attention_heads, cfg.d_model // cfg.decoder_attention_heads
    enc, dec = EncoderKV(model).eval(), DecoderStep(model).eval()
    feats = torch.zeros(1, cfg.num_mel_bins, 2 * cfg.max_source_positions)
    enc_path, dec_path = folder / "encoder.onnx", folder / "decoder.onnx"
    kv = torch.zeros(cfg.decoder_layers, 1, heads, 3, head_dim)
    with torch.no_grad(), warnings.catch_warnings():
        # The legacy exporter is deprecated but is the one whose exact-GELU export MNN honours; the
        # tracer's shape-check warnings concern the fixed 30 s input only.
        warnings.simplefilter("ignore")
        ck, cv = enc(feats)
        torch.onnx.export(enc, (feats,), str(enc_path), dynamo=False, opset_version=17,
                          input_names=list(ENC_IN), output_names=list(ENC_OUT))
        toks, pos = torch.ones(1, 2, dtype=torch.int32), torch.tensor([3, 4], dtype=torch.int32)
        torch.onnx.export(dec, (toks, pos, kv, kv, ck, cv), str(dec_path), dynamo=False, opset_version=17,
                          input_names=list(DEC_IN), output_names=list(DEC_OUT),
                          dynamic_axes={"tokens": {1: "K"}, "positions": {0: "K"}, "past_k": {3: "P"},
                                        "past_v": {3: "P"}, "logits": {1: "K"}, "new_k": {3: "PK"},
                                        "new_v": {3: "PK"}})
    shapes = {"layers": cfg.decoder_layers, "heads": heads, "head_dim": head_dim,
              "source_positions": cfg.max_source_positions, "mel_bins": cfg.num_mel_bins,
              "target_positions": cfg.max_target_positions, "vocab_size": cfg.vocab_size}
    return enc_path, dec_path, shapes


def _check_against_torch(model, folder: Path, quant: str | None) -> float:
    """Prompt logits of the fresh MNN export against torch's on the same zero-audio input."""
    import numpy as np
    import torch

    from workbench.models.mnn.graph import DecoderStep, EncoderKV
    from workbench.models.mnn.runtime import MnnSettings, const, load_module, read

    cfg = model.config
    feats = torch.zeros(1, cfg.num_mel_bins, 2 * cfg.max_source_positions)
    toks = torch.tensor([[cfg.decoder_start_token_id, cfg.decoder_start_token_id]], dtype=torch.int32)
    pos = torch.arange(2, dtype=torch.int32)
    with torch.no_grad():
        ck, cv = EncoderKV(model)(feats)
        empty = torch.zeros(ck.shape[0], 1, ck.shape[2], 0, ck.shape[4])
        ref = DecoderStep(model)(toks, pos, empty, empty, ck, cv)[0].numpy()
    s = MnnSettings()
    enc = load_module(folder / ENCODER, ENC_IN, ENC_OUT, s)
    dec = load_module(folder / DECODER, DEC_IN, DEC_OUT, s)
    mk, mv = enc.forward([const(feats.numpy())])
    e = const(empty.numpy())
    got = read(dec.forward([const(toks.numpy()), const(pos.numpy()), e, e, mk, mv])[0])
    return float(np.abs(got - ref).max())


def export_whisper(model_dir: str | Path, quant: str | None = None, force: bool = False,
                   progress: bool = True) -> Path:
    """Cached MNN export of a transformers Whisper dir; returns the export dir."""
    from tqdm.auto import tqdm

    if quant not in QUANTS:
        raise ValueError(f"quant={quant!r} is unknown; choose one of {QUANTS}")
    model_dir = Path(os.path.abspath(model_dir))  # not resolve(): the cache's name is a symlink to a versioned dir
    out = export_dir(model_dir, quant)
    if not force and (out / MANIFEST).is_file():
        check_export(out, model_dir, quant)
        return out
    from workbench.models.whisper import load_whisper

    steps = ["load torch weights", "ONNX export", "convert encoder", "convert decoder", "check vs torch"]
    bar = tqdm(total=len(steps), desc=f"MNN export {model_dir.name}", disable=not progress)
    bar.set_postfix_str(steps[0])
    model = load_whisper(model_dir).model
    bar.update()
    with atomic_dir(out) as tmp, tempfile.TemporaryDirectory(prefix="as2d-onnx-") as onnx_dir:
        bar.set_postfix_str(steps[1])
        enc_onnx, dec_onnx, shapes = _export_onnx(model, Path(onnx_dir))
        bar.update()
        for name, src in ((ENCODER, enc_onnx), (DECODER, dec_onnx)):
            bar.set_postfix_str(f"convert {name}")
            convert_onnx(src, tmp / name, quant)
            src.unlink()  # ONNX files are as big as the MNN ones: free the disk as we go
            bar.update()
        bar.set_postfix_str(steps[-1])
        diff = _check_against_torch(model, tmp, quant)
        limit = 2.0 if quant else 1e-2  # int8 weights drift (~0.6 on tiny.en); fp32 must match torch
        if not diff < limit:  # also catches NaN
            raise MnnExportError(f"MNN export of {model_dir} drifts from torch: max |logit diff| {diff:.3g} "
                                 f">= {limit} on the prompt")
        bar.update()
        for name in SIDE_FILES:
            if (model_dir / name).is_file():
                shutil.copy2(model_dir / name, tmp / name)
        files = {n: {"size": (tmp / n).stat().st_size, "sha256": _sha256(tmp / n)} for n in (ENCODER, DECODER)}
        manifest = {"format_version": FORMAT_VERSION, "source": str(model_dir), "weights_hash": out.name,
                    "quant": quant, "max_abs_logit_diff_vs_torch": diff, "files": files, **shapes}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
    bar.close()
    return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Export a transformers Whisper dir (or a conf/model entry) to MNN.")
    ap.add_argument("model", help="a transformers Whisper dir, or a conf/model name (its target and drafter)")
    ap.add_argument("--quant", choices=[q for q in QUANTS if q], default=None)
    ap.add_argument("--force", action="store_true", help="re-export even if a valid cached export exists")
    args = ap.parse_args(argv)
    dirs = [Path(args.model)]
    if not (dirs[0] / "config.json").is_file():
        from workbench.models.registry import ModelSpec, load_model_config, resolve_weights

        cfg = load_model_config(args.model)
        dirs = [resolve_weights(ModelSpec.from_dict(cfg[r])) for r in ("target", "drafter") if cfg.get(r)]
    for d in dirs:
        print(export_whisper(d, args.quant, force=args.force))


if __name__ == "__main__":
    main()
