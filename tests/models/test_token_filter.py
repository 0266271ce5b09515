"""Audio-token reduction filter (D.6.2) on a tiny real Qwen2-Audio: 75 of every 100 tokens by bins."""

from __future__ import annotations

import pytest
import torch

from tests.models.tiny_audio_lms import AUDIO, EOS, qwen2_audio_window, tiny_qwen2_audio
from workbench.decoding import decode, make_scheme
from workbench.models.token_filter import (
    FilteredAudioLMTarget,
    RidgeImportance,
    fit_filter,
    kept_count,
    select_by_bins,
)


def test_keeps_exactly_75_of_100_one_per_equal_time_bin() -> None:
    scores = torch.arange(100.0) % 7  # maxima scattered; ties go to the earliest token
    kept = select_by_bins(scores)
    assert len(kept) == 75 and kept == sorted(kept) and len(set(kept)) == 75
    for j, i in enumerate(kept):  # bin j covers [floor(100j/75), floor(100(j+1)/75))
        lo, hi = (100 * j) // 75, (100 * (j + 1)) // 75
        assert lo <= i < hi and scores[i] == scores[lo:hi].max()
        assert all(scores[x] < scores[i] for x in range(lo, i))  # the earliest maximum
    assert [kept_count(n) for n in (200, 40, 3, 1, 0)] == [150, 30, 2, 1, 0]


def test_ridge_recovers_a_linear_importance_and_round_trips(tmp_path) -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 6, generator=g)
    w = torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0, -1.0])
    model = RidgeImportance.fit(x, x @ w + 0.25, alpha=1e-6)
    assert torch.allclose(model.weight, w, atol=1e-4) and model.bias == pytest.approx(0.25, abs=1e-4)
    back = RidgeImportance.load(model.save(tmp_path / "filter.safetensors"))
    assert torch.equal(back.weight, model.weight) and back.bias == model.bias
    with pytest.raises(FileNotFoundError, match="fit it"):
        RidgeImportance.load(tmp_path / "missing.safetensors")


def test_filtered_target_prefills_75_percent_of_the_audio_tokens() -> None:
    model = tiny_qwen2_audio(5)
    cases = [qwen2_audio_window(model, seed=s, frames=32) for s in range(3)]
    predictor = fit_filter(model, [(c.audio_ids, c.instruction_ids, c.audio_inputs) for c in cases], alpha=1.0)
    c = cases[0]
    n_audio = c.audio_ids.count(AUDIO)
    target = FilteredAudioLMTarget(model, c.audio_ids, c.instruction_ids, c.audio_inputs, EOS, [0],
                                   predictor=predictor)
    target.audio_prefill()
    s = target.session
    assert (s.audio_tokens, s.kept) == (n_audio, kept_count(n_audio))
    assert s.audio_len == len(c.audio_ids) - n_audio + kept_count(n_audio)  # kept tokens: consecutive positions
    out = decode(make_scheme("target_only", max_output=12, eos_id=EOS), target).output
    assert 1 <= len(out) <= 12  # the filtered prefix decodes normally (quality is reported, not asserted)


def test_the_offline_fit_script_measures_one_window_by_the_rule() -> None:
    """workbench.native.token_filter_fit on its own (Qwen2-Audio-shaped) target: 128 mel bins from the
    Whisper feature extractor, 25 audio tokens per second, 75 of every 100 kept, both outputs decoded."""
    import numpy as np

    from workbench.native.token_filter_fit import AUDIO as FIT_AUDIO
    from workbench.native.token_filter_fit import INSTRUCTION, filter_target, measure_window, window_inputs

    model = filter_target(0)
    audio = (0.1 * np.random.default_rng(0).standard_normal(3 * 16_000)).astype(np.float32)
    ids, inputs = window_inputs(model, audio)
    n = ids.count(FIT_AUDIO)
    assert n == 75 and inputs["input_features"].shape[1] == 128  # 3 s -> 300 frames -> 75 tokens
    predictor = fit_filter(model, [(ids, INSTRUCTION, inputs)])
    assert predictor.weight.shape == (384,) and torch.count_nonzero(predictor.weight) > 0
    row = measure_window(model, predictor, audio, "w0", max_output=4, reps=1)
    assert (row["audio_tokens"], row["kept_tokens"]) == (75, kept_count(75))
    assert row["filtered_sequence"] == row["sequence"] - 75 + kept_count(75)
    assert 1 <= row["reference_tokens"] <= 4 and 0 <= row["ridge_wer"] and 0 <= row["uniform_wer"]
