"""The B.1 probe corpora (GigaSpeech, SPGISpeech, Earnings-22) on tiny copies of their real layouts,
loaded through the Hydra dataset configs like the seven paper datasets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.data import dataset_fixtures as fx
from tests.data.test_datasets import dataset_cfg
from workbench.data.datasets import DatasetLayoutError, check_dataset, dataset_windows, load_utterances


def _close(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    return a.size == b.size and float(np.abs(a - b).max()) < tol


def test_gigaspeech_test_segments_of_one_podcast(tmp_path: Path, speech: fx.Speech) -> None:
    root, spans = fx.gigaspeech(tmp_path, speech)
    ds = dataset_cfg("gigaspeech", f"dataset.root={root}")
    utts = load_utterances(ds)
    # {TEST} only, garbage-only <MUSIC> left out, punctuation tags back as punctuation
    assert [u.utt_id for u in utts] == [f"POD0000000001_S{i:07d}" for i in range(3)]
    assert utts[1].text == "PLEASE CLOSE THE WINDOW, BEFORE THE RAIN STARTS."
    assert [u.meta["start"] for u in utts] == pytest.approx([b for b, _ in spans])
    got = utts[2].load()  # a span of the opus recording (lossy: compared loosely, but sample-aligned)
    ref = speech.audio[2]
    assert abs(got.size - ref.size) <= 1
    n = min(got.size, ref.size)
    assert float(np.corrcoef(got[:n], ref[:n])[0, 1]) > 0.9
    ws = dataset_windows(ds)
    assert [w.utt_ids for w in ws] == [tuple(u.utt_id for u in utts)]  # one podcast: one packed window
    assert ws[0].seconds == pytest.approx(sum(e - b for b, e in spans), abs=1e-3)


def test_spgispeech_slices_of_one_call_in_spoken_order(tmp_path: Path, speech: fx.Speech) -> None:
    root = fx.spgispeech(tmp_path, speech)
    ds = dataset_cfg("spgispeech", f"dataset.root={root}")
    utts = load_utterances(ds)
    assert [u.utt_id for u in utts] == ["2c1e7f0a/1", "2c1e7f0a/2", "9d4b3e11/1"]
    assert [u.text for u in utts] == list(speech.texts)
    assert _close(utts[1].load(), speech.audio[1], 1e-3)
    ws = dataset_windows(ds)
    assert [w.utt_ids for w in ws] == [("2c1e7f0a/1", "2c1e7f0a/2"), ("9d4b3e11/1",)]


def test_earnings22_whole_calls_with_their_nlp_references(tmp_path: Path, speech: fx.Speech) -> None:
    root = fx.earnings22(tmp_path, speech)
    ds = dataset_cfg("earnings22", f"dataset.root={root}")
    utts = load_utterances(ds)
    assert [u.utt_id for u in utts] == ["4420696", "4448760"]
    assert utts[0].text == "The cat sat on the warm mat. Please close the window before the rain starts."
    assert utts[0].seconds == pytest.approx(speech.seconds(0) + speech.seconds(1), abs=0.1)
    # a call longer than the window limit is left out, never cut
    short = dataset_windows(dataset_cfg("earnings22", f"dataset.root={root}",
                                        f"dataset.window.max_seconds={speech.seconds(2) + 0.2}"))
    assert [w.utt_ids for w in short] == [("4448760",)]


@pytest.mark.parametrize("name", ["gigaspeech", "spgispeech", "earnings22"])
def test_wrong_root_names_the_layout_and_fixture_passes_the_check(tmp_path: Path, speech: fx.Speech,
                                                                  name: str) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetLayoutError, match=f"dataset.root=.*{name} expects"):
        check_dataset(dataset_cfg(name, f"dataset.root={tmp_path / 'empty'}"))
    root = fx.BUILDERS[name](tmp_path / "data", speech)
    check_dataset(dataset_cfg(name, f"dataset.root={root}"))
