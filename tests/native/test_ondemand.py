"""On-demand requests (A.3, D.6.1) on a tiny real Qwen2-Audio target: the latency identity."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from tests.models.tiny_audio_lms import EOS, perturbed, qwen2_audio_window, tiny_qwen2_audio
from workbench.decoding import decode, make_scheme
from workbench.models.audio_lm import AudioLMTarget, audio_lm_drafter
from workbench.native.driver import NativeHost
from workbench.native.ondemand import (
    CHECKPOINTS,
    RequestTarget,
    RequestTiming,
    request_trace,
    tail_latency,
    word_agreement,
    word_edits,
)
from workbench.native.windows import SAMPLE_RATE

CAP = 40


@pytest.fixture(scope="module")
def case():
    return qwen2_audio_window(tiny_qwen2_audio(3), seed=1)


def _target(case) -> AudioLMTarget:
    return AudioLMTarget(case.model, case.audio_ids, case.instruction_ids, case.audio_inputs, EOS, [0])


@pytest.mark.parametrize("prepared", [True, False])
@pytest.mark.parametrize("scheme", ["target_only", "sd"])
def test_latency_pieces_add_up_to_the_measured_wall_time(case, scheme, prepared) -> None:
    reference = decode(make_scheme("target_only", max_output=CAP, eos_id=EOS), _target(case)).output
    target = RequestTarget(_target(case))
    if prepared:
        target.prepare()
        assert target.inner.session is not None and target.prepared_s > 0
    drafter = audio_lm_drafter(perturbed(case.model, 0.5, 7), case.audio_ids, case.instruction_ids,
                               case.audio_inputs, EOS, CAP) if scheme == "sd" else None
    params = {"width": 4} if scheme == "sd" else {}
    with NativeHost(None) as host:
        r = host.run("w0", scheme, target, max_output=CAP, drafter=drafter, params=params)
    t = RequestTiming.of(target, r)
    # an identity on one clock: consecutive timestamps s_u <= audio <= root <= origin <= EOS <= f_u
    assert math.isclose(sum(t.pieces.values()), t.latency_s, rel_tol=1e-12, abs_tol=1e-12)
    assert all(v >= 0 for v in t.pieces.values())
    assert t.latency_s == pytest.approx(r.origin + r.time - target.t_request, abs=1e-12)
    assert t.ttft_s == pytest.approx(target.t_root - target.t_request, abs=1e-12)
    # unprepared audio KV is built inside the request; prepared: no residual piece at all
    assert (t.residual_audio_s > 0) == (not prepared) and (t.residual_audio_s == 0) == prepared
    assert list(r.output) == list(reference)  # the request wrapper leaves the greedy output untouched


def test_request_trace_has_nineteen_checkpoints_and_the_latest_window() -> None:
    clips = [("a", np.full(7 * SAMPLE_RATE, 0.1, np.float32)), ("b", np.full(5 * SAMPLE_RATE, 0.2, np.float32))]
    trace = request_trace(clips, 600.0, gap_s=0.0)
    assert len(trace.checkpoints) == 19 and trace.checkpoints[0] == 60 and trace.checkpoints[-1] == 600
    assert trace.seconds == pytest.approx(600.0)
    assert trace.clip_ids[:4] == ("a", "b", "a", "b")  # looped in corpus order
    w = trace.window(72.0, 30.0)  # 42..72 s; clips: a 36-43, b 43-48, a 48-55
    assert w.seconds == pytest.approx(30.0)
    assert [float(w.audio[int(s * SAMPLE_RATE)]) for s in (0.5, 3.0, 6.5)] == pytest.approx([0.1, 0.2, 0.1])
    assert CHECKPOINTS == tuple(range(60, 601, 30))
    with pytest.raises(ValueError, match="after the trace"):
        request_trace(clips, 300.0)


def test_word_edits_and_the_agreement_bound() -> None:
    ref = " ".join(f"w{i}" for i in range(300))
    assert word_edits("The cat, sat.", "the cat sat") == (0, 3)
    assert word_edits("a b c d", "a x c") == (2, 4)
    hyp = ref.replace("w5 ", "v5 ").replace("w9 ", "").replace("w20 ", "w20 extra ")
    assert word_edits(ref, hyp) == (3, 300) and word_agreement(ref, hyp)  # 3 edits, 1.0%
    assert not word_agreement(ref, hyp.replace("w30 ", ""))  # 4 edits
    short = " ".join(f"w{i}" for i in range(50))
    assert not word_agreement(short, short.replace("w3 ", ""))  # 1 edit but 2% > 1%


def test_tail_latency_by_hand() -> None:
    f = pl.DataFrame({"method": ["a"] * 5 + ["b"] * 2, "latency_s": [1.0, 2.0, 3.0, 4.0, 10.0, 5.0, 7.0],
                      "ttft_s": [0.1] * 7, "request_tps": [1.0] * 7, "decode_tps": [2.0] * 7, "peak_rss_mb": [9.0] * 7,
                      "exact": [True] * 7, "word_agreement": [True] * 6 + [False]})
    t = {r["method"]: r for r in tail_latency(f).iter_rows(named=True)}
    assert t["a"]["latency_p50"] == 3.0 and t["a"]["latency_p95"] == pytest.approx(4.0 + 0.8 * 6.0)
    assert t["b"]["latency_p95"] == pytest.approx(5.0 + 0.95 * 2.0) and t["b"]["word_agreement"] == 1


class _CallLog:
    """Times of every forward of the hooked modules, on the request's own clock."""

    def __init__(self, modules) -> None:
        import time

        self.times: list[float] = []
        self.handles = [m.register_forward_hook(lambda *_: self.times.append(time.perf_counter())) for m in modules]

    def inside(self, start: float, end: float) -> int:
        return sum(start <= t <= end for t in self.times)

    def close(self) -> None:
        for h in self.handles:
            h.remove()


@pytest.mark.parametrize("prepared", [True, False])
@pytest.mark.parametrize("scheme", ["target_only", "sd"])
def test_a_prepared_whisper_request_runs_no_encoder_inside_the_timed_span(scheme, prepared) -> None:
    """Section 5.4 / D.6.1: with prepared audio the request times prompt prefill + decoding only;
    the encoder and the cross-attention K/V projections run before s_u."""
    from tests.models.conftest import tiny_audio, tiny_whisper
    from workbench.models.whisper import WhisperTarget, whisper_drafter

    bundle, audio = tiny_whisper(seed=2), tiny_audio(0.5, seed=3)
    decoder = bundle.model.model.decoder
    log = _CallLog([bundle.model.model.encoder, *(layer.encoder_attn.k_proj for layer in decoder.layers)])
    try:
        reference = decode(make_scheme("target_only", max_output=CAP, eos_id=3), WhisperTarget(bundle, audio)).output
        target = RequestTarget(WhisperTarget(bundle, audio))
        drafter = whisper_drafter(bundle, audio) if scheme == "sd" else None  # built (encoded) before s_u
        if prepared:
            target.prepare()
            assert target.inner.audio_prepared and target.prepared_s > 0
        with NativeHost(None) as host:
            r = host.run("w0", scheme, target, max_output=CAP, drafter=drafter,
                         params={"width": 4} if scheme == "sd" else {})
        finish = r.origin + r.time
        per_encode = 1 + len(decoder.layers)  # one encoder call and one cross K projection per layer
        assert log.inside(target.t_request, finish) == (0 if prepared else per_encode)
    finally:
        log.close()
    t = RequestTiming.of(target, r)
    assert (t.residual_audio_s > 0) == (not prepared)
    assert list(r.output) == list(reference)  # prepared or not, the greedy output is the target's
