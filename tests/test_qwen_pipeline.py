"""Qwen pipelines end to end: tiny saved releases of the audio-LM families through the real Hydra
command, like a researcher with real weights on disk would run them.

* Qwen3-ASR (target + same-vocabulary producer/drafter) with a Parakeet CTC chunk source:
  ``experiment=demo model=qwen3_asr model.target.local_path=... model.drafter.local_path=...`` on a
  LibriSpeech layout: traces -> replay -> budget selection and oracle -> native host runs (the
  producer in its own process) -> MLflow, every output audited against target-only.
* Qwen2-Audio on CoVoST2 en->zh: each window is prompted with its own translation instruction from
  the cohort manifest, and replay reports BLEU/chrF beside speed.

The releases are random tiny configs saved with ``save_pretrained`` (weights + processor files), so a
forward costs milliseconds; the outputs are meaningless text, exactness is what is checked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mlflow
import numpy as np
import polars as pl
import pytest
import torch

from tests.data import dataset_fixtures as fx
from tests.models.tiny_audio_lms import perturbed
from tests.models.tiny_processors import (
    qwen2_audio_for,
    qwen2_audio_processor,
    qwen3_asr_for,
    qwen3_asr_processor,
    save_release,
)

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # two Hydra runs with a producer process: minutes on a loaded 2-core machine
TWO_WINDOWS = ["dataset.window.mode=utterance", "dataset.cohort.splits.test=2", "dataset.cohort.splits.dev=1",
               "dataset.cohort.splits.validation=0", "dataset.cohort.splits.calibration=0"]
QUICK = ["model.max_new_tokens=8", "devices=[k70_pro]", "budgets=[1,3]"]


def tiny_parakeet(path: Path) -> Path:
    """A tiny random ParakeetForCTC release (the external chunk source of the Qwen3-ASR pair)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import (
        ParakeetCTCConfig,
        ParakeetFeatureExtractor,
        ParakeetForCTC,
        ParakeetProcessor,
        ParakeetTokenizer,
    )

    from tests.models.test_parakeet_source import PIECES
    from tests.models.tiny_audio_lms import spread

    tok = Tokenizer(models.Unigram([(p, -1.0 - 0.01 * i) for i, p in enumerate(PIECES)], unk_id=0))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    processor = ParakeetProcessor(feature_extractor=ParakeetFeatureExtractor(feature_size=16),
                                  tokenizer=ParakeetTokenizer(tokenizer_object=tok, unk_token="<unk>",
                                                              pad_token="<pad>"))
    cfg = ParakeetCTCConfig(vocab_size=len(processor.tokenizer), pad_token_id=processor.tokenizer.pad_token_id,
                            encoder_config=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                                intermediate_size=64, num_mel_bins=16, subsampling_conv_channels=8,
                                                conv_kernel_size=3))
    return save_release(spread(ParakeetForCTC(cfg), seed=0), processor, path)


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Path]:
    """Target and producer/drafter releases per family (the drafter: the target with a perturbed head,
    so it agrees often but not always), plus a Parakeet CTC release."""
    root = tmp_path_factory.mktemp("releases")
    out: dict[str, Path] = {}
    for family, make_proc, make_model in (("qwen3_asr", qwen3_asr_processor, qwen3_asr_for),
                                          ("qwen2_audio", qwen2_audio_processor, qwen2_audio_for)):
        proc = make_proc()
        target = make_model(proc, seed=0)
        out[f"{family}.target"] = save_release(target, proc, root / family / "target")
        out[f"{family}.drafter"] = save_release(perturbed(target, 0.15, seed=7), proc, root / family / "drafter")
    out["parakeet"] = tiny_parakeet(root / "parakeet")
    return out


@pytest.fixture(scope="module")
def speech() -> fx.Speech:
    return fx.speech_clips()


def run_cli(*args: str) -> subprocess.CompletedProcess:
    # one thread per process: the tiny models' forwards are dominated by thread hand-offs otherwise
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "workbench.run", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env=env)


def test_qwen3_asr_release_runs_traces_replay_oracle_native(tmp_path, releases, speech):
    data = fx.librispeech(tmp_path / "data", speech)
    db, out = tmp_path / "m.db", tmp_path / "out"
    res = run_cli("experiment=demo", "model=qwen3_asr", f"model.target.local_path={releases['qwen3_asr.target']}",
                  f"model.drafter.local_path={releases['qwen3_asr.drafter']}",
                  f"model.parakeet_ctc.local_path={releases['parakeet']}", "dataset=librispeech",
                  f"dataset.root={data}", "dataset.split=all", *TWO_WINDOWS, *QUICK,
                  "native.methods=[target_only,sd,asp,as2d]",
                  "native.max_windows=1", "native.warmup=0", f"tracking.uri=sqlite:///{db}", f"hydra.run.dir={out}",
                  f"out_dir={out}")
    assert res.returncode == 0, res.stderr[-4000:]
    windows = pl.read_parquet(out / "tables" / "windows.parquet")
    # the cohort's dev row and its two test rows (the demo selects on dev, reports test)
    assert set(windows["dataset"]) == {"librispeech"} and windows["window_id"].n_unique() == 3
    assert {"target_only", "sd", "asp", "as2d"} <= set(windows["method"])
    # every replayed method committed the target-only output length on every window
    per = windows.group_by("window_id", "device").agg(pl.col("tokens").n_unique().alias("n"))
    assert per["n"].max() == 1
    # the oracle searched both trace sources: the Qwen producer and the Parakeet chunk source
    oracle = [p for p in (out / "tables").glob("*oracle*.parquet")]
    assert oracle, sorted(p.name for p in (out / "tables").iterdir())
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    (run,) = mlflow.search_runs(search_all_experiments=True, output_format="list",
                                filter_string="tags.`as2d.role` = 'job'")
    assert run.info.status == "FINISHED"
    assert run.data.metrics["exactness_mismatches"] == 0.0 and run.data.metrics["native.mismatches"] == 0.0
    summary = pl.read_parquet(out / "tables" / "summary.parquet")
    native = summary.filter(pl.col("clock") == "native")
    # native host runs of each method, producer in its own process, all equal to target-only
    assert set(native["method"]) == {"target_only", "sd", "asp", "as2d"}
    assert native["matched"].min() == 1.0 and native["tps"].min() > 0


def test_chunk_source_publishes_whole_chunks_without_confidence(releases):
    """The pair's Parakeet CTC source in a trace: one operation per 2.56 s chunk, no confidence."""
    from workbench.models.pair import load_pair
    from workbench.models.registry import load_model_config
    from workbench.traces.windows import chunk_stream

    torch.set_num_threads(1)
    m = load_model_config("qwen3_asr")
    m["target"]["local_path"], m["drafter"]["local_path"] = str(releases["qwen3_asr.target"]), str(
        releases["qwen3_asr.drafter"])
    m["parakeet_ctc"]["local_path"] = str(releases["parakeet"])
    pair = load_pair(m)
    audio = (0.1 * np.random.default_rng(0).standard_normal(int(16000 * 6.0))).astype(np.float32)
    stream = chunk_stream(pair.chunk_stream("parakeet_ctc", audio))
    items = list(stream)
    assert stream.forwards == 3  # 6 s -> three chunks, each one atomic operation
    assert all(p.confidence is None for p in items)
    assert len({p.t_generated for p in items}) <= 3  # a chunk's tokens share one publication time
    with pytest.raises(ValueError, match="sensevoice has no runtime wired here.*pip install sherpa-onnx"):
        pair.chunk_stream("sensevoice", audio)
    with pytest.raises(ValueError, match="unknown external source 'whisperx'"):
        pair.chunk_stream("whisperx", audio)


def test_qwen2_audio_translation_prompts_each_window_with_its_instruction(tmp_path, releases, speech):
    data = fx.covost2(tmp_path / "data", speech)
    db, out = tmp_path / "m.db", tmp_path / "out"
    res = run_cli("experiment=replay", "model=qwen2_audio", f"model.target.local_path={releases['qwen2_audio.target']}",
                  f"model.drafter.local_path={releases['qwen2_audio.drafter']}", "dataset=covost2_en_zh",
                  f"dataset.root={data}", "dataset.cohort.splits.test=2", *QUICK, f"tracking.uri=sqlite:///{db}",
                  f"hydra.run.dir={out}", f"out_dir={out}")
    assert res.returncode == 0, res.stderr[-4000:]
    cohort = pl.read_parquet(out / "tables" / "cohort.parquet")
    test_ids = cohort["window_id"].to_list()
    assert set(cohort["instruction"]) == {"Translate the speech into Chinese. Output only the translation."}
    windows = pl.read_parquet(out / "tables" / "windows.parquet")
    assert set(windows["window_id"]) == set(test_ids)
    mlflow.set_tracking_uri(f"sqlite:///{db}")
    (run,) = mlflow.search_runs(search_all_experiments=True, output_format="list",
                                filter_string="tags.`as2d.role` = 'job'")
    assert run.info.status == "FINISHED" and run.data.metrics["exactness_mismatches"] == 0.0
    assert "quality.bleu" in run.data.metrics and "quality.chrf" in run.data.metrics

    # the traced reference is the target's greedy output under the window's own instruction, which
    # differs from the pair's default ASR prompt (the instruction reaches the model)
    from workbench.data.corpus import Corpus
    from workbench.jobs.demo_traces import instructions
    from workbench.models.pair import load_pair
    from workbench.models.registry import load_model_config
    from workbench.traces.collect import greedy_reference

    torch.set_num_threads(1)
    m = load_model_config("qwen2_audio")
    m["target"]["local_path"], m["drafter"]["local_path"] = (str(releases["qwen2_audio.target"]),
                                                             str(releases["qwen2_audio.drafter"]))
    pair = load_pair(m)
    from workbench.models.cache import cache_root

    wav = sorted(cache_root().rglob(f"{test_ids[0]}.wav"))
    assert wav, "the run wrote its windows under AS2D_CACHE"
    asks = instructions(Corpus(wav[-1].parent, []))
    assert asks[test_ids[0]].startswith("Translate the speech into Chinese")
    from workbench.data.audio import load_audio

    audio = load_audio(wav[-1], None)
    target = pair.new_target(audio, asks[test_ids[0]])
    text = pair.target_codec.decode(target.instruction_ids)
    assert "Translate the speech into Chinese" in text
    default = pair.new_target(audio)
    assert "Transcribe the speech." in pair.target_codec.decode(default.instruction_ids)
    # audio first: the retained audio state C_u is the same for any instruction; only the suffix differs
    assert target.audio_ids == default.audio_ids and target.instruction_ids != default.instruction_ids
    assert len(greedy_reference(target, 8)) == 8  # the instruction-prompted target decodes
