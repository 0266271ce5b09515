"""Qwen2-Audio, Qwen2.5-Omni thinker and Qwen3-ASR targets: pathwise equivalence, commit-and-repair, and
speculative output equal to target-only output (tiny random configs)."""

from __future__ import annotations

import itertools

import pytest
import torch

from tests.models.test_audio_lm_target import tiny_qwen3_asr
from tests.models.tiny_audio_lms import (
    AUDIO,
    EOS,
    VOCAB,
    AudioLMCase,
    omni_window,
    perturbed,
    qwen2_audio_window,
    qwen3_asr_window,
    tiny_omni_thinker,
    tiny_qwen2_audio,
)
from workbench.decoding import PublicationBuffer, audit_exact, decode, make_scheme
from workbench.decoding.protocols import Target
from workbench.models.audio_lm import AudioLMTarget, audio_lm_drafter, audio_lm_producer
from workbench.models.drafting import publish_all

FAMILIES = {"qwen2_audio": (tiny_qwen2_audio, qwen2_audio_window), "qwen2_5_omni": (tiny_omni_thinker, omni_window),
            "qwen3_asr": (tiny_qwen3_asr, qwen3_asr_window)}
SUPPRESS = [AUDIO]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # tiny models: on a shared 2-core machine thread hand-offs cost 10x the arithmetic
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request):
    build, window = FAMILIES[request.param]
    return build(), window


def _target(case: AudioLMCase) -> AudioLMTarget:
    return AudioLMTarget(case.model, case.audio_ids, case.instruction_ids, case.audio_inputs, EOS, SUPPRESS)


def _steps(t: AudioLMTarget, root: int, n: int) -> tuple[list[int], list[torch.Tensor]]:
    toks, logits, cur = [], [], root
    for _ in range(n):
        cur = t.verify(cur, [])[0]
        t.keep(0)
        toks.append(cur)
        logits.append(t.last_logits[0].clone())
    return toks, logits


@pytest.mark.parametrize("k", [2, 5])
def test_verify_width_k_equals_k_single_steps(family, k):
    model, window = family
    case = window(model, seed=0)
    ref = _target(case)
    assert isinstance(ref, Target) and ref.vocab_size == VOCAB
    root = ref.prefill()
    toks, step_logits = _steps(ref, root, k)
    blk = _target(case)
    assert blk.prefill() == root
    assert blk.verify(root, toks[: k - 1]) == toks[:k]
    torch.testing.assert_close(blk.last_logits, torch.stack(step_logits), rtol=0, atol=1e-5)


def test_incremental_state_equals_the_models_own_full_forward(family):
    """Audio prefill, instruction prefill and verify with our positions reproduce one uncached
    forward over the whole sequence (Omni: the model's own 3-D rope index)."""
    model, window = family
    case = window(model, seed=3)
    t = _target(case)
    root = t.prefill()
    toks, _ = _steps(t, root, 3)
    greedy = t.verify(toks[-1], [5, 6])
    seq = case.audio_ids + case.instruction_ids + [root, *toks, 5, 6]
    ids = torch.tensor([seq])
    with torch.inference_mode():
        full = model(input_ids=ids, attention_mask=torch.ones_like(ids), **case.audio_inputs).logits[0, -3:]
    full = full.float() + t.session._mask
    torch.testing.assert_close(t.last_logits, full, rtol=0, atol=1e-5)
    assert greedy == torch.argmax(full, dim=-1).tolist()


def test_crop_and_correction_equal_fresh_run(family):
    model, window = family
    case = window(model, seed=1)
    ref = _target(case)
    root = ref.prefill()
    toks, _ = _steps(ref, root, 5)
    chain = [toks[0], (toks[1] + 1) % VOCAB, toks[2], toks[3]]
    spec = _target(case)
    spec.prefill()
    greedy = spec.verify(root, chain)
    assert greedy[:2] == toks[:2]  # the correction at position 1 is the reference token
    spec.keep(1)
    assert spec.committed_entries == 2
    after = spec.verify(greedy[1], [toks[2]])
    fresh = _target(case)
    fresh.prefill()
    for tok in (root, toks[0]):
        fresh.verify(tok, [])
        fresh.keep(0)
    assert fresh.verify(toks[1], [toks[2]]) == after == toks[2:4]
    torch.testing.assert_close(spec.last_logits, fresh.last_logits, rtol=0, atol=1e-5)
    for a, b in zip(spec.session.cache.layers, fresh.session.cache.layers, strict=True):
        torch.testing.assert_close(a.keys, b.keys, rtol=0, atol=1e-5)
    assert AUDIO not in toks


def _step_clock(dt: float):
    ticks = itertools.count()
    return lambda: dt * next(ticks)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_speculative_output_equals_target_only(family, seed):
    model, window = family
    drafter_model = perturbed(model, scale=0.15, seed=100 + seed)
    case = window(model, seed=10 + seed)
    draft_case = AudioLMCase(drafter_model, case.audio_ids, case.instruction_ids, case.audio_inputs)
    cap = 20
    reference = decode(make_scheme("target_only", max_output=cap, eos_id=EOS), _target(case)).output
    assert len(reference) >= 2

    def drafter():
        c = draft_case
        return audio_lm_drafter(c.model, c.audio_ids, c.instruction_ids, c.audio_inputs, EOS, 64, SUPPRESS)

    def buffer(producer_model: torch.nn.Module) -> PublicationBuffer:
        # tokens published in batches of 8 while the target decodes; the buffer is immutable
        buf = PublicationBuffer(vocab_size=VOCAB)
        c = case
        prod = audio_lm_producer(producer_model, c.audio_ids, c.instruction_ids, c.audio_inputs, EOS, cap, SUPPRESS,
                                 clock=_step_clock(0.3))
        publish_all(iter(prod), buf.publish)
        buf.finish(buf.batches[-1].publish_time)
        return buf

    accepted = rejected = 0
    for name, settings in (("sd", {"width": 4}), ("asp", {}), ("as2d_wo_td", {"budget": 3})):
        res = decode(make_scheme(name, max_output=cap, eos_id=EOS, drafter=drafter(), **settings),
                     _target(case))
        audit_exact(res.output, reference, f"{name} seed {seed}")
        accepted += sum(r.accepted for r in res.records)
        rejected += sum(r.width - 1 - r.accepted for r in res.records)
    # a diverging producer (perturbed head) and one that follows the target's own path
    for label, producer in (("perturbed", drafter_model), ("same-model", model)):
        for name, bound in (("as2d", {"budget": 3}), ("as2d_wo_bc", {"cap": 3})):  # w/o BC bounds by ASP's cap
            res = decode(make_scheme(name, max_output=cap, eos_id=EOS, source=buffer(producer), **bound),
                         _target(case))
            audit_exact(res.output, reference, f"{name} ({label} producer) seed {seed}")
            if label == "same-model":  # the target's own path: most candidates are accepted
                # (not all: a repeated token can anchor the read cursor at the wrong occurrence)
                acc, proposed = (sum(f(r) for r in res.records) for f in (lambda r: r.accepted, lambda r: r.width - 1))
                assert acc > 0 and 2 * acc >= proposed
    assert accepted > 0 and rejected > 0  # the drafter both helps and is corrected
