"""Dataset loaders on tiny copies of each real layout, loaded through the Hydra dataset configs.

Three piper clips are synthesized once per module and copied into every layout; the tests check
that each loader finds every utterance with its transcript, returns exactly the samples written,
packs windows within one recording under the limit, and names the layout when the root is wrong.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from tests.data import dataset_fixtures as fx
from workbench.data.datasets import DatasetLayoutError, check_dataset, dataset_windows, load_utterances
from workbench.jobs.base import ConfigError

CONF = Path(__file__).resolve().parents[2] / "conf"


def dataset_cfg(name: str, *overrides: str) -> dict:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[f"dataset={name}", *overrides])
    return OmegaConf.to_container(cfg.dataset, resolve=True)


def _close(a: np.ndarray, b: np.ndarray, tol: float = 1e-3) -> bool:
    return a.size == b.size and float(np.abs(a - b).max()) < tol  # PCM_16 quantization is ~3e-5


def test_librispeech_layout(tmp_path: Path, speech: fx.Speech) -> None:
    root = fx.librispeech(tmp_path, speech)
    utts = load_utterances(dataset_cfg("librispeech", f"dataset.root={root}"))
    assert [u.utt_id for u in utts] == ["1089-134686-0000", "1089-134686-0001", "121-121726-0000"]
    assert utts[1].text == "PLEASE CLOSE THE WINDOW BEFORE THE RAIN STARTS"
    assert _close(utts[2].load(), speech.audio[2])
    # packing: the first chapter's two utterances form one window; the other chapter its own
    ws = dataset_windows(dataset_cfg("librispeech", f"dataset.root={root}"))
    assert [w.utt_ids for w in ws] == [("1089-134686-0000", "1089-134686-0001"), ("121-121726-0000",)]
    assert _close(ws[0].load(), np.concatenate(speech.audio[:2]))
    assert ws[0].reference == "THE CAT SAT ON THE WARM MAT PLEASE CLOSE THE WINDOW BEFORE THE RAIN STARTS"
    # a limit between one and two utterances splits the chapter; the subset folder works as root too
    limit = (speech.seconds(0) + speech.seconds(1)) - 0.5
    ws = dataset_windows(dataset_cfg("librispeech", f"dataset.root={root / 'test-clean'}",
                                     f"dataset.window.max_seconds={limit}"))
    assert [len(w.utt_ids) for w in ws] == [1, 1, 1]


def test_model_limit_leaves_long_utterances_out(tmp_path: Path, speech: fx.Speech) -> None:
    root = fx.librispeech(tmp_path, speech)
    ds = dataset_cfg("librispeech", f"dataset.root={root}")
    shortest = min(range(3), key=speech.seconds)
    model = {"max_audio_seconds": speech.seconds(shortest) + 0.01}
    ws = dataset_windows(ds, model)
    # only the shortest clip fits; nothing is truncated to fit
    assert [w.seconds for w in ws] == pytest.approx([speech.seconds(shortest)], abs=1e-3)
    whisper = {"target": {"family": "whisper"}}
    assert all(w.seconds <= 30.0 for w in dataset_windows(ds, whisper))


def test_ami_segments_become_one_span_per_window(tmp_path: Path, speech: fx.Speech) -> None:
    root, spans = fx.ami(tmp_path, speech)
    ds = dataset_cfg("ami", f"dataset.root={root}")
    utts = load_utterances(ds)
    assert [u.text for u in utts] == [t for t in speech.texts]  # punctuation attached, laugh dropped
    assert [u.meta["start"] for u in utts] == pytest.approx([s for s, _ in spans])
    clip = speech.audio[1]
    got = utts[1].load()
    assert got.size == clip.size + (-clip.size % 160) and _close(got[: clip.size], clip)
    ws = dataset_windows(ds)
    assert len(ws) == 1 and len(ws[0].segments) == 1  # contiguous span of the meeting, not a concatenation
    assert ws[0].seconds == pytest.approx(spans[-1][1] - spans[0][0], abs=1e-3)
    with pytest.raises(DatasetLayoutError, match=r"dataset.meetings=\['IS1009a'\].*found \['ES2004a'\]"):
        dataset_windows(dataset_cfg("ami", f"dataset.root={root}", "dataset.meetings=[IS1009a]"))


def test_fleurs_kespeech_m4singer_layouts(tmp_path: Path, speech: fx.Speech) -> None:
    f = load_utterances(dataset_cfg("fleurs", f"dataset.root={fx.fleurs(tmp_path / 'f', speech)}",
                                    "dataset.languages=[de_de,cmn_hans_cn]"))
    assert [(u.group, u.language, u.text) for u in f] == [
        ("de_de", "de", speech.texts[0]), ("de_de", "de", speech.texts[1]), ("cmn_hans_cn", "zh", fx.ZH[2])]
    assert _close(f[1].load(), speech.audio[1])
    k_cfg = dataset_cfg("kespeech", f"dataset.root={fx.kespeech(tmp_path / 'k', speech)}")
    k = load_utterances(k_cfg)
    assert [u.text for u in k] == list(fx.ZH) and [u.group for u in k] == ["1000001", "1000001", "1000002"]
    sw = load_utterances({**k_cfg, "subdialects": ["Beijing"]})
    assert [u.utt_id for u in sw] == ["1000002_0002"]
    kw = dataset_windows(k_cfg)
    assert [w.reference for w in kw] == [fx.ZH[0] + fx.ZH[1], fx.ZH[2]]  # Chinese joins without spaces
    m = load_utterances(dataset_cfg("m4singer", f"dataset.root={fx.m4singer(tmp_path / 'm', speech)}"))
    assert [(u.group, u.text) for u in m] == [("Alto-1#newboy", fx.ZH[0]), ("Alto-1#newboy", fx.ZH[1]),
                                             ("Tenor-2#moon", fx.ZH[2])]
    assert _close(m[2].load(), speech.audio[2])


def test_covost2_both_directions(tmp_path: Path, speech: fx.Speech) -> None:
    root = fx.covost2(tmp_path, speech)
    en = dataset_windows(dataset_cfg("covost2_en_zh", f"dataset.root={root}"))
    assert [(w.task, w.text, w.reference, w.meta["target_language"]) for w in en] == [
        ("translation", t, z, "zh") for t, z in zip(speech.texts, fx.ZH, strict=True)]
    # mp3 decoding: same length within a codec frame, and clearly the same signal
    a, b = en[0].load(), speech.audio[0]
    assert abs(a.size - b.size) < 2400 and a.size > 0.9 * b.size
    zh = dataset_windows(dataset_cfg("covost2_zh_en", f"dataset.root={root}"))
    assert [w.reference for w in zh] == list(speech.texts[:2])  # the train row is not in test
    assert all(w.language == "zh" for w in zh)


def test_spoken_squad_questions_share_passage_audio(tmp_path: Path, speech: fx.Speech) -> None:
    ws = dataset_windows(dataset_cfg("spoken_squad", f"dataset.root={fx.spoken_squad(tmp_path, speech)}"))
    assert [w.utt_ids[0] for w in ws] == ["q-cat", "q-window", "q-boats"]
    assert ws[1].meta["answers"] == ["the window", "window"] and ws[1].reference == "the window"
    assert ws[0].meta["question"] == "Where did the cat sit?"
    assert _close(ws[0].load(), np.concatenate(speech.audio[:2]))
    assert ws[0].segments == ws[1].segments and ws[0].task == "qa"


@pytest.mark.parametrize("parquet", [False, True])
def test_hf_copy_matches_native_layout(tmp_path: Path, speech: fx.Speech, parquet: bool) -> None:
    native = load_utterances(dataset_cfg("librispeech", f"dataset.root={fx.librispeech(tmp_path / 'n', speech)}"))
    hf_root = fx.hf_librispeech(tmp_path / "h", speech, parquet)
    hf = load_utterances(dataset_cfg("librispeech", f"dataset.root={hf_root}"))
    assert [(u.utt_id, u.text, u.group) for u in hf] == [(u.utt_id, u.text, u.group) for u in native]
    assert all(_close(a.load(), b.load()) for a, b in zip(hf, native, strict=True))
    with pytest.raises(ValueError, match="hf_split"):
        load_utterances(dataset_cfg("librispeech", f"dataset.root={tmp_path / 'h'}", "dataset.hf_split=train"))


@pytest.mark.parametrize("name", ["librispeech", "ami", "fleurs", "kespeech", "m4singer", "covost2_en_zh",
                                  "spoken_squad"])
def test_wrong_root_names_the_layout(tmp_path: Path, name: str) -> None:
    from workbench.data.datasets import LOADERS

    ds = dataset_cfg(name, f"dataset.root={tmp_path}")
    layout = LOADERS[ds["loader"]].LAYOUT
    for bad in (tmp_path / "missing", tmp_path):  # a missing folder, and an empty one
        for check in (load_utterances, check_dataset):  # the full load, and the check before a run
            with pytest.raises(DatasetLayoutError) as e:
                check({**ds, "root": str(bad)})
            msg = str(e.value)
            assert "\n" not in msg and layout in msg and str(bad) in msg
            assert isinstance(e.value, ConfigError) and e.value.key == "dataset.root"  # printed as one line
    with pytest.raises(DatasetLayoutError, match="not set"):
        load_utterances(dataset_cfg(name))


@pytest.mark.parametrize("name", ["librispeech", "fleurs", "kespeech", "m4singer", "covost2_en_zh", "covost2_zh_en",
                                  "spoken_squad"])
def test_check_passes_on_each_fixture_layout(tmp_path: Path, speech: fx.Speech, name: str) -> None:
    root = fx.BUILDERS[name](tmp_path, speech)
    check_dataset(dataset_cfg(name, f"dataset.root={root}", "dataset.languages=[de_de,cmn_hans_cn]"
                              if name == "fleurs" else "dataset.seed=0"))
    check_dataset(dataset_cfg("ami", f"dataset.root={fx.ami(tmp_path / 'ami', speech)[0]}"))


def test_listed_file_missing_is_named(tmp_path: Path, speech: fx.Speech) -> None:
    root = fx.librispeech(tmp_path, speech)
    gone = root / "test-clean" / "121" / "121726" / "121-121726-0000.flac"
    gone.unlink()
    from workbench.data.screen import bad_files

    # a missing file is a bad file like any other: the validation pass names it, loading goes on
    (bad,) = bad_files(load_utterances(dataset_cfg("librispeech", f"dataset.root={root}")))
    assert bad.source == str(gone) and bad.reason == "does not exist"


def test_run_windows_written_once_with_cohort_manifest(tmp_path: Path, speech: fx.Speech) -> None:
    import polars as pl

    from workbench.data.datasets.materialize import corpus_from_dataset

    root = fx.kespeech(tmp_path / "k", speech)
    ds = dataset_cfg("kespeech", f"dataset.root={root}", "dataset.window.mode=utterance",
                     "dataset.cohort.splits.test=2", "dataset.cohort.splits.dev=1",
                     "dataset.cohort.splits.validation=0", "dataset.cohort.splits.calibration=0")
    corpus = corpus_from_dataset(ds, None, out_dir=tmp_path / "w")
    manifest = pl.read_parquet(tmp_path / "w" / "cohort.parquet")
    assert manifest["split"].to_list() == ["test", "test", "dev"]  # empty splits have no rows
    assert [c.window_id for c in corpus] == manifest.filter(pl.col("split") == "test")["window_id"].to_list()
    by_text = {t: a for t, a in zip(fx.ZH, speech.audio, strict=True)}
    for clip in corpus:
        assert clip.origin == "kespeech" and _close(corpus.load_audio(clip), by_text[clip.text])
    stamp = {c.path: c.path.stat().st_mtime_ns for c in corpus}
    dev = corpus_from_dataset({**ds, "split": "dev"}, None, out_dir=tmp_path / "w")
    assert len(dev) == 1 and dev.clips[0].window_id not in {c.window_id for c in corpus}
    assert all(p.stat().st_mtime_ns == t for p, t in stamp.items())  # written once, reused
    # same samples -> same bytes in a fresh folder (the trace cache keys windows on the file hash)
    again = corpus_from_dataset(ds, None, out_dir=tmp_path / "w2")
    assert [c.path.read_bytes() for c in again] == [c.path.read_bytes() for c in corpus]
    with pytest.raises(ValueError, match="dataset.split: 'train' is not a split"):
        corpus_from_dataset({**ds, "split": "train"}, None, out_dir=tmp_path / "w")


def test_combined_cohort_draws_each_part_on_its_own(tmp_path: Path, speech: fx.Speech) -> None:
    from workbench.data.datasets.materialize import dataset_cohort

    small = {"window": {"mode": "utterance"}, "cohort": {"splits": {"test": 2, "dev": 1, "validation": 0,
                                                                    "calibration": 0}}}
    roots = {"librispeech": fx.librispeech(tmp_path / "l", speech), "kespeech": fx.kespeech(tmp_path / "k", speech)}
    ds = dataset_cfg("paper_asr")
    ds["parts"] = {name: {"root": str(root), **small} for name, root in roots.items()}
    splits, frame = dataset_cohort(ds)
    alone = {name: dataset_cohort({**dataset_cfg(name, f"dataset.root={root}"), **small})[0]
             for name, root in roots.items()}
    for split in ("test", "dev"):
        assert [w.window_id for w in splits[split]] == [w.window_id for name in roots for w in alone[name][split]]
    assert frame.filter(frame["split"] == "test")["dataset"].to_list() == ["librispeech"] * 2 + ["kespeech"] * 2
    ds["parts"]["kespeech"]["root"] = str(tmp_path / "missing")
    with pytest.raises(DatasetLayoutError, match="kespeech expects KeSpeech/Tasks/ASR"):
        check_dataset(ds)


def test_ami_hf_copy_concatenates_its_segment_clips(tmp_path: Path, speech: fx.Speech) -> None:
    import io

    import datasets
    import soundfile as sf

    rows: dict[str, list] = {k: [] for k in ("meeting_id", "audio_id", "text", "begin_time", "end_time", "audio")}
    for i in (2, 0, 1):  # rows out of time order: the loader orders a meeting by begin time
        buf = io.BytesIO()
        sf.write(buf, speech.audio[i], fx.SR, format="WAV", subtype="PCM_16")
        rows["meeting_id"].append("ES2004a")
        rows["audio_id"].append(f"AMI_ES2004a_H00_{i:04d}")
        rows["text"].append(speech.texts[i].upper())
        rows["begin_time"].append(10.0 * i)
        rows["end_time"].append(10.0 * i + speech.seconds(i))
        rows["audio"].append({"bytes": buf.getvalue(), "path": f"{i}.wav"})
    ds = datasets.Dataset.from_dict(rows).cast_column("audio", datasets.Audio(sampling_rate=fx.SR))
    (tmp_path / "sdm").mkdir()
    ds.to_parquet(str(tmp_path / "sdm" / "test-00000-of-00001.parquet"))
    ws = dataset_windows(dataset_cfg("ami", f"dataset.root={tmp_path}"))
    assert len(ws) == 1 and ws[0].utt_ids == tuple(f"AMI_ES2004a_H00_{i:04d}" for i in range(3))
    assert _close(ws[0].load(), np.concatenate(speech.audio))  # separate clips: concatenated, not a span
