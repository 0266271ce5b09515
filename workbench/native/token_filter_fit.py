"""Fit the audio-token reduction filter offline on the demo corpus and measure it (D.6.2).

    python -m workbench.native.token_filter_fit [--out DIR] [--windows 8] [--seed 0]

The filter applies to Qwen-family targets whose audio tokens enter the LM sequence. No Qwen
weights are available offline here, so the target is a small random-weight Qwen2-Audio built
from a config (``filter_target``: 128 mel bins and a 30 s encoder like the real model, a small
LM); its features come from real speech through the Whisper feature extractor (no download).

1. Fit: the demo corpus's dev split (whole clips); labels are the unfiltered target's
   instruction->audio attention (``token_filter.fit_filter``). Saved as
   ``<out>/filter.safetensors`` + ``filter.json``.
2. Measure: 30 s request windows of the test split (the on-demand request trace,
   ``workbench.native.ondemand.request_trace``), each prefilled and decoded greedily by the
   unfiltered target, the filtered target, and the same 75-of-100 bins without the predictor
   (first token of each bin: the baseline the predictor must beat). Prefill time is the LM prefill
   over the merged sequence (the encoder runs either way, timed apart); quality is the word error
   rate of the filtered output against the unfiltered output (token ids as words) and exact match.
   Written to ``<out>/measure.parquet`` and ``<out>/summary.json``.

A random-weight target's output measures how much the filter perturbs the target, not speech
recognition quality; the same command runs on real weights once a Qwen2-Audio checkpoint is loadable.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from workbench.models.token_filter import (
    FilteredAudioLMTarget,
    RidgeImportance,
    audio_positions,
    fit_filter,
    kept_count,
    merged_embeds,
    select_by_bins,
)

SAMPLE_RATE = 16_000
N_MELS = 128  # Qwen2-Audio's feature extractor
VOCAB, AUDIO, AUDIO_BOS, AUDIO_EOS, EOS, PAD = 2048, 2000, 2001, 2002, 2003, 2004
PREFIX, INSTRUCTION = [11, 12, 13], [21, 22, 23, 24, 25, 26, 27, 28]  # prompt head, instruction suffix


def filter_target(seed: int = 0) -> torch.nn.Module:
    """A small random-weight Qwen2-Audio (30 s encoder window: 1500 positions -> 750 audio tokens)."""
    from transformers import Qwen2AudioConfig, Qwen2AudioForConditionalGeneration

    cfg = Qwen2AudioConfig(
        audio_config=dict(num_mel_bins=N_MELS, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=256,
                          d_model=64, max_source_positions=1500),
        text_config=dict(model_type="qwen2", vocab_size=VOCAB, hidden_size=384, intermediate_size=1024,
                         num_hidden_layers=6, num_attention_heads=6, num_key_value_heads=2,
                         max_position_embeddings=2048),
        audio_token_index=AUDIO, eos_token_id=EOS, pad_token_id=PAD)
    torch.manual_seed(seed)
    model = Qwen2AudioForConditionalGeneration(cfg)
    with torch.no_grad():  # unit-variance activations: greedy argmax has clear winners
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0.0, p.shape[-1] ** -0.5)
    return model.eval()


def window_inputs(model: torch.nn.Module, audio: np.ndarray) -> tuple[list[int], dict[str, Any]]:
    """(audio prompt ids, audio inputs) as Qwen2-Audio's processor lays them out (<= 30 s)."""
    from transformers import WhisperFeatureExtractor

    fe = WhisperFeatureExtractor(feature_size=N_MELS, sampling_rate=SAMPLE_RATE)
    f = fe(audio, sampling_rate=SAMPLE_RATE, return_attention_mask=True, return_tensors="pt")
    mask = f["attention_mask"].long()
    n = int(model.model.audio_tower._get_feat_extract_output_lengths(mask.sum(-1))[1])
    return [*PREFIX, AUDIO_BOS, *[AUDIO] * n, AUDIO_EOS], {"input_features": f["input_features"],
                                                          "feature_attention_mask": mask}


def _timed(fn: Any, reps: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _lm_prefill(model: torch.nn.Module, embeds: torch.Tensor) -> None:
    with torch.inference_mode():
        model(inputs_embeds=embeds.unsqueeze(0), use_cache=True)


def uniform(dim: int) -> RidgeImportance:
    """No predictor: equal scores, so each bin keeps its first token (the baseline to beat)."""
    return RidgeImportance(torch.zeros(dim), 0.0, 0.0)


def measure_window(model: torch.nn.Module, predictor: RidgeImportance, audio: np.ndarray, window_id: str,
                   max_output: int = 32, reps: int = 3) -> dict[str, Any]:
    from workbench.decoding import decode, make_scheme
    from workbench.models.audio_lm import AudioLMTarget
    from workbench.native.ondemand import word_edits

    ids, inputs = window_inputs(model, audio)
    encode_s, embeds = _timed(lambda: merged_embeds(model, ids, inputs), reps)
    pos = audio_positions(model, ids)
    kept = select_by_bins(predictor.score(embeds[pos]))
    drop = {pos[i] for i in range(len(pos))} - {pos[i] for i in kept}
    rows = [i for i in range(len(ids)) if i not in drop]
    full_s, _ = _timed(lambda: _lm_prefill(model, embeds), reps)
    filt_s, _ = _timed(lambda: _lm_prefill(model, embeds[rows]), reps)

    def output(target: Any) -> list[int]:
        return list(decode(make_scheme("target_only", max_output=max_output, eos_id=EOS), target).output)

    ref = output(AudioLMTarget(model, ids, INSTRUCTION, inputs, EOS))
    outs = {name: output(FilteredAudioLMTarget(model, ids, INSTRUCTION, inputs, EOS, predictor=p))
            for name, p in (("ridge", predictor), ("uniform", uniform(embeds.shape[-1])))}

    def words(toks: Sequence[int]) -> str:
        return " ".join(f"t{t}" for t in toks)

    row: dict[str, Any] = {"window_id": window_id, "audio_s": len(audio) / SAMPLE_RATE, "audio_tokens": len(pos),
                           "kept_tokens": len(kept), "sequence": len(ids), "filtered_sequence": len(rows),
                           "encode_s": encode_s, "lm_prefill_full_s": full_s, "lm_prefill_filtered_s": filt_s}
    for name, out in outs.items():
        edits, n = word_edits(words(ref), words(out))
        row |= {f"{name}_wer": edits / max(n, 1), f"{name}_exact": out == ref, f"{name}_tokens": len(out)}
    row["reference_tokens"] = len(ref)
    return row


def demo_split(seed: int = 0) -> tuple[list[Any], list[Any]]:
    """(dev, test) clips of the demo corpus (built offline into the cache when missing)."""
    from omegaconf import OmegaConf

    from workbench.data.corpus import corpus_from_config, split

    ds = OmegaConf.to_container(OmegaConf.load(Path(__file__).resolve().parents[2] / "conf/dataset/demo.yaml"))
    corpus = corpus_from_config(ds)
    dev, test = split(corpus, float(ds["dev_fraction"]), seed)
    return [(c.window_id, corpus.load_audio(c)) for c in dev], [(c.window_id, corpus.load_audio(c)) for c in test]


def run(out: Path, windows: int = 8, seed: int = 0, window_s: float = 30.0, max_output: int = 32,
        alpha: float = 1.0) -> dict[str, Any]:
    import polars as pl
    from tqdm.auto import tqdm

    from workbench.io import atomic_write_json, atomic_write_parquet
    from workbench.native.ondemand import request_trace

    model = filter_target(seed)
    dev, test = demo_split(seed)
    cases = []
    for _, audio in tqdm(dev, desc="filter fit: dev clips", unit="clip"):
        ids, inputs = window_inputs(model, audio[: int(window_s * SAMPLE_RATE)])
        cases.append((ids, INSTRUCTION, inputs))
    t = time.perf_counter()
    predictor = fit_filter(model, cases, alpha=alpha)
    fit_s = time.perf_counter() - t
    path = predictor.save(Path(out) / "filter.safetensors")
    trace = request_trace(test, windows * window_s, [window_s * (i + 1) for i in range(windows)])
    rows = [measure_window(model, predictor, trace.window(c, window_s).audio, f"req{int(c):04d}", max_output)
            for c in tqdm(trace.checkpoints, desc="filter measure: 30 s windows", unit="window")]
    frame = pl.DataFrame(rows)
    atomic_write_parquet(Path(out) / "measure.parquet", frame)
    full, filt = float(frame["lm_prefill_full_s"].sum()), float(frame["lm_prefill_filtered_s"].sum())
    summary = {
        "target": "random-weight Qwen2-Audio (workbench.native.token_filter_fit.filter_target)",
        "fit_clips": len(dev), "fit_s": fit_s, "filter": str(path), "windows": frame.height, "window_s": window_s,
        "audio_tokens": int(frame["audio_tokens"].sum()), "kept_tokens": int(frame["kept_tokens"].sum()),
        "kept_share": float(frame["kept_tokens"].sum() / frame["audio_tokens"].sum()),
        "expected_kept": int(sum(kept_count(n) for n in frame["audio_tokens"])),
        "lm_prefill_full_s": full, "lm_prefill_filtered_s": filt, "prefill_saved_share": 1 - filt / full,
        "encode_s": float(frame["encode_s"].sum()),
        **{f"{k}_wer_mean": float(frame[f"{k}_wer"].mean()) for k in ("ridge", "uniform")},
        **{f"{k}_exact": int(frame[f"{k}_exact"].sum()) for k in ("ridge", "uniform")},
        "loadavg": os.getloadavg()[0], "cpus": os.cpu_count()}
    atomic_write_json(Path(out) / "summary.json", summary, indent=2)
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    from workbench.models.cache import cache_root

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=cache_root() / "token_filter" / "qwen2_audio_filter_target")
    ap.add_argument("--windows", type=int, default=8, help="30 s test windows to measure")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-output", type=int, default=32)
    a = ap.parse_args(argv)
    if a.windows < 1:
        ap.error("--windows must be >= 1")
    s = run(a.out, a.windows, a.seed, max_output=a.max_output)
    print(json.dumps(s, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
