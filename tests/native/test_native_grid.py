"""The native drafter x budget grid (B.4, D.4.5, Table 14) end to end: the real ``python -m workbench.run
experiment=native_grid`` on tiny real models -- a tiny Whisper pair, the real PocketSphinx recognizer
and a tiny Parakeet CTC in their own producer processes -- on one demo window, one repetition, one K,
into a temporary MLflow store; every run reproduces target-only's greedy output, and the Table 14
notebook's builder draws the logged table beside the paper's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    ParakeetCTCConfig,
    ParakeetFeatureExtractor,
    ParakeetForCTC,
    ParakeetProcessor,
    ParakeetTokenizer,
    WhisperConfig,
    WhisperForConditionalGeneration,
)

from tests.models.test_tokenizer import MERGES, _byte_level
from tests.models.tiny_audio_lms import spread
from tests.native.test_native import TINY, save

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
PIECES = ["<unk>", "▁", "▁the", "▁a", "▁cat", "▁sat", "▁on", "▁mat", *"abcdefghijklmnopqrstuvwxyz"]


def _tiny_whisper(d: Path) -> Path:
    """A tiny random Whisper over a byte-level Tok_T (its tokenizer.json): chunk text reaches the target
    vocabulary through it; target and producer share these weights (same greedy function)."""
    tok = _byte_level(MERGES)
    model = spread(WhisperForConditionalGeneration(WhisperConfig(**{**TINY, "vocab_size": tok.get_vocab_size()})),
                   seed=0)
    save(model, d)
    tok.save(str(d / "tokenizer.json"))
    return d


def _tiny_parakeet(d: Path) -> Path:
    tok = Tokenizer(models.Unigram([(p, -1.0 - 0.01 * i) for i, p in enumerate(PIECES)], unk_id=0))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    pk_tok = ParakeetTokenizer(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>")
    processor = ParakeetProcessor(feature_extractor=ParakeetFeatureExtractor(feature_size=16), tokenizer=pk_tok)
    cfg = ParakeetCTCConfig(vocab_size=len(processor.tokenizer), pad_token_id=processor.tokenizer.pad_token_id,
                            encoder_config=dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                                intermediate_size=64, num_mel_bins=16, subsampling_conv_channels=8,
                                                conv_kernel_size=3))
    spread(ParakeetForCTC(cfg), seed=0).save_pretrained(d)
    processor.save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("grid")
    whisper = _tiny_whisper(d / "whisper")
    parakeet = _tiny_parakeet(d / "parakeet")
    uri = f"sqlite:///{d / 'mlflow.db'}"

    def spec(role: str, name: str, path: Path) -> list[str]:
        return [f"model.{role}.name={name}", f"model.{role}.local_path={path}", f"model.{role}.offline_package=null",
                f"model.{role}.hub_id=null"]

    res = subprocess.run(
        [sys.executable, "-m", "workbench.run", "experiment=native_grid", *spec("target", "tiny-target", whisper),
         "model.target.kernels=plain", *spec("drafter", "tiny-producer", whisper),
         "model.drafter.vocabulary=shared", "model.drafter.quantize=null", "model.serial_drafter=null",
         "model.max_new_tokens=24", "model.external_sources=[pocketsphinx_en,parakeet_ctc]",
         f"+model.parakeet_ctc={{name: parakeet-tiny, family: parakeet_ctc, local_path: '{parakeet}'}}",
         "grid.widths=[4]", "grid.repeats=1", "grid.warmup=0", "grid.max_seconds=6", "dataset.max_windows=4",
         f"tracking.uri={uri}", f"hydra.run.dir={d / 'out'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    return uri


def test_the_grid_runs_every_source_natively_and_every_run_is_exact(grid_run) -> None:
    from workbench.figures.runs import latest_table
    from workbench.native.grid import GRID_COLUMNS, RUN_COLUMNS

    runs, run = latest_table("as2d-native_grid", "grid_runs", uri=grid_run)
    grid, _ = latest_table("as2d-native_grid", "grid", uri=grid_run)
    assert run.info.status == "FINISHED" and run.data.metrics["exactness_mismatches"] == 0
    assert tuple(runs.columns) == RUN_COLUMNS and tuple(grid.columns) == GRID_COLUMNS
    arms = ["target_only", "as2d/tiny-producer/K4", "as2d/pocketsphinx_en/K4", "as2d/parakeet_ctc/K4"]
    assert sorted(runs["arm"]) == sorted(arms) and runs["matched"].all()  # one window, one repetition, exact
    assert sorted(runs["position"]) == [0, 1, 2, 3]  # each arm once in the repetition's order
    assert (runs.filter(pl.col("arm") != "target_only")["widest"] <= 4).all()  # K = b + 1 with b = 3
    control = runs.filter(pl.col("arm") == "target_only").row(0, named=True)
    assert control["extra_tokens"] == 0 and control["target_calls"] == control["tokens"] - 1  # K1 after prefill
    # every call commits its accepted candidates plus one target token: calls + extra = tokens after prefill
    assert (runs["target_calls"] + runs["extra_tokens"] == runs["tokens"] - 1).all()
    # Table 14's shape, recomputed from the runs: pooled TPS, gain over the control, task TPS (D.1.2)
    for row in grid.iter_rows(named=True):
        r = runs.filter(pl.col("arm") == row["arm"]).row(0, named=True)
        assert row["tps"] == pytest.approx(r["tokens"] / r["time"])
        assert row["tps_useful"] == pytest.approx(r["useful_tokens"] / r["time"])
        assert row["gain_pct"] == pytest.approx(100 * (row["tps"] / (control["tokens"] / control["time"]) - 1))
        assert row["budget"] == (0 if row["arm"] == "target_only" else 3) and row["matched"]
    assert run.data.metrics["grid.as2d/pocketsphinx_en/K4.tps"] == pytest.approx(
        grid.filter(pl.col("arm") == "as2d/pocketsphinx_en/K4")["tps"][0])


def test_the_table14_notebook_draws_the_run_beside_the_paper(grid_run, monkeypatch) -> None:
    from workbench.figures import native_jobs, selection

    monkeypatch.setenv("MLFLOW_TRACKING_URI", grid_run)
    result = native_jobs.table14_native_grid(selection.Selector())
    tables = {k.split(":")[0]: v for k, v in result.tables.items()}
    assert set(tables) == {"paper (phones)", "this run"}
    assert tables["paper (phones)"]["tps"].to_list()[0] == 14.58
    assert {"as2d/pocketsphinx_en/K4", "target_only"} <= set(tables["this run"]["arm"])
    assert "grid" in result.charts


@pytest.mark.parametrize(("override", "names"), [
    ("grid.widths=[1,4]", "grid.widths: need maximum chain widths K >= 2"),
    ("grid.sources=[producer,sensevoice]", "grid.sources: unknown ['sensevoice']"),
    ("grid.sources=[parakeet_ctc]", "model.parakeet_ctc: the parakeet_ctc grid source needs its block"),
    ("grid.repeats=0", "grid.repeats: need an integer >= 1"),
])
def test_a_bad_grid_setting_is_one_line_naming_it(override: str, names: str) -> None:
    from hydra import compose, initialize_config_dir

    from workbench.jobs import native_grid
    from workbench.jobs.base import ConfigError

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        cfg = compose("config", overrides=["experiment=native_grid", override])
    with pytest.raises(ConfigError) as err:
        native_grid.validate(cfg)
    assert str(err.value).startswith(names) and "\n" not in str(err.value)
