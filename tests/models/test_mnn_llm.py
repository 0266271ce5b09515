"""Tiny Qwen3 exported with llmexport and run on MNN.llm: width-K verify, rollback, and every
speculative scheme reproducing MNN target-only output (the family exactness tests, on MNN)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

from tests.models.tiny_audio_lms import perturbed, spread, tiny_omni_thinker, tiny_qwen2_audio
from tests.models.tiny_processors import byte_tokenizer
from workbench.decoding import PublicationBuffer, audit_exact, decode, make_scheme
from workbench.decoding.protocols import Drafter, Target
from workbench.decoding.schemes.catalog import scheme_spec
from workbench.models.mnn.llm import (
    MnnLlmDrafter,
    MnnLlmError,
    MnnLlmTarget,
    export_llm,
    load_llm,
    refuse,
    run_llmexport,
)
from workbench.models.mnn.runtime import EngineConfigError, check_engine

PROMPTS = ([5, 6, 7, 8, 9], [40, 41, 42], [70, 3, 99, 12, 13, 14])


def _save(model: torch.nn.Module, tok, path) -> None:
    model.save_pretrained(path)
    tok.save_pretrained(path)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """(target llm, drafter llm, eos, vocab): a tiny Qwen3 and a head-perturbed copy, both on MNN.llm."""
    tok = byte_tokenizer({})
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    cfg = Qwen3Config(vocab_size=len(tok) + 8, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=512,
                      tie_word_embeddings=False, eos_token_id=eos)
    target = spread(Qwen3ForCausalLM(cfg), 0)
    root = tmp_path_factory.mktemp("qwen3")
    _save(target, tok, root / "target")
    _save(perturbed(target, scale=0.15, seed=7), tok, root / "drafter")
    t, d = load_llm(export_llm(root / "target")), load_llm(export_llm(root / "drafter"))
    # a session on a used Llm starts from an empty KV: same tokens and logits as a just-loaded Llm
    dirty = MnnLlmTarget(t, PROMPTS[2], eos, cfg.vocab_size)
    dirty.verify(dirty.prefill(), [1, 2])
    used = MnnLlmTarget(t, PROMPTS[0], eos, cfg.vocab_size)
    new = load_llm(export_llm(root / "target"))
    clean = MnnLlmTarget(new, PROMPTS[0], eos, cfg.vocab_size)
    assert used.prefill() == clean.prefill()
    assert used.verify(4, [5]) == clean.verify(4, [5])
    np.testing.assert_allclose(used.last_logits, clean.last_logits, rtol=0, atol=1e-5)
    del clean, new
    yield t, d, eos, cfg.vocab_size
    del t, d  # every Var was dropped inside the sessions; the Llms go last


def _steps(t: MnnLlmTarget, root: int, n: int) -> tuple[list[int], list[np.ndarray]]:
    toks, logits, cur = [], [], root
    for _ in range(n):
        cur = t.verify(cur, [])[0]
        t.keep(0)
        toks.append(cur)
        logits.append(t.last_logits[0].copy())
    return toks, logits


@pytest.mark.parametrize("k", [2, 5])
def test_verify_width_k_equals_k_single_steps(models, k):
    llm, _, eos, vocab = models
    ref = MnnLlmTarget(llm, PROMPTS[0], eos, vocab)
    assert isinstance(ref, Target)
    root = ref.prefill()
    toks, step_logits = _steps(ref, root, k)
    blk = MnnLlmTarget(llm, PROMPTS[0], eos, vocab)
    assert blk.prefill() == root
    assert blk.verify(root, toks[: k - 1]) == toks[:k]
    np.testing.assert_allclose(blk.last_logits, np.stack(step_logits), rtol=0, atol=1e-4)


def test_rollback_and_correction_equal_fresh_run(models):
    llm, _, eos, vocab = models
    ref = MnnLlmTarget(llm, PROMPTS[1], eos, vocab)
    root = ref.prefill()
    toks, _ = _steps(ref, root, 5)
    chain = [toks[0], (toks[1] + 1) % vocab, toks[2], toks[3]]
    spec = MnnLlmTarget(llm, PROMPTS[1], eos, vocab)
    spec.prefill()
    greedy = spec.verify(root, chain)
    assert greedy[:2] == toks[:2]  # the correction at position 1 is the reference token
    spec.keep(1)
    assert spec.committed_entries == 2
    after = spec.verify(greedy[1], [toks[2]])
    spec_logits = spec.last_logits.copy()
    fresh = MnnLlmTarget(llm, PROMPTS[1], eos, vocab)
    fresh.prefill()
    for tok in (root, toks[0]):
        fresh.verify(tok, [])
        fresh.keep(0)
    assert fresh.verify(toks[1], [toks[2]]) == after == toks[2:4]
    np.testing.assert_allclose(spec_logits, fresh.last_logits, rtol=0, atol=1e-4)
    with pytest.raises(ValueError, match="keep: n_accepted=2"):
        fresh.keep(2)


def _buffer(llm, prompt: list[int], cap: int, vocab: int) -> PublicationBuffer:
    """A producer decoding the same input greedily on MNN, published in batches of 8."""
    d = MnnLlmDrafter(llm, prompt)
    first = int(np.argmax(d._next))
    p = d.propose([first], cap - 1)
    toks, confs = [first, *p.tokens], [1.0, *p.confidences]
    buf = PublicationBuffer(vocab_size=vocab)
    for i in range(0, len(toks), 8):
        buf.publish(toks[i:i + 8], 0.3 * (i + 8), confs[i:i + 8])
    buf.finish(buf.batches[-1].publish_time)
    return buf


@pytest.mark.parametrize("prompt", PROMPTS)
def test_speculative_output_equals_mnn_target_only(models, prompt):
    llm, dllm, eos, vocab = models
    cap = 20
    reference = decode(make_scheme("target_only", max_output=cap, eos_id=eos),
                       MnnLlmTarget(llm, prompt, eos, vocab)).output
    assert len(reference) >= 2
    accepted = rejected = 0
    for name, settings in (("sd", {"width": 4}), ("asp", {}), ("as2d_wo_td", {"budget": 3})):
        drafter = MnnLlmDrafter(dllm, prompt)
        assert isinstance(drafter, Drafter)
        res = decode(make_scheme(name, max_output=cap, eos_id=eos, drafter=drafter, **settings),
                     MnnLlmTarget(llm, prompt, eos, vocab))
        audit_exact(res.output, reference, f"{name} prompt {prompt}")
        accepted += sum(r.accepted for r in res.records)
        rejected += sum(r.width - 1 - r.accepted for r in res.records)
    for label, producer in (("perturbed", dllm), ("same-model", llm)):
        buf = _buffer(producer, prompt, cap, vocab)
        for name in ("as2d", "as2d_wo_bc"):
            chain = {scheme_spec(name).chain_setting: 3}  # budget (As²d) or cap (w/o BC)
            res = decode(make_scheme(name, max_output=cap, eos_id=eos, source=buf, **chain),
                         MnnLlmTarget(llm, prompt, eos, vocab))
            audit_exact(res.output, reference, f"{name} ({label} producer) prompt {prompt}")
            if label == "same-model":
                acc = sum(r.accepted for r in res.records)
                assert acc > 0 and 2 * acc >= sum(r.width - 1 for r in res.records)
    assert accepted > 0 and rejected > 0  # the MNN drafter both helps and is corrected


def test_drafter_catches_up_after_a_rejection(models):
    _, dllm, _, _ = models
    d = MnnLlmDrafter(dllm, PROMPTS[2])
    first = d.propose([3], 4)
    assert first.catchup == 1 and first.forwards == 4
    # the committed prefix diverged after the root: the drafter rolls back and re-reads only the new tail
    other = (first.tokens[0] + 1) % 200
    again = d.propose([3, other], 2)
    assert again.catchup == 1 and again.forwards == 2
    fresh = MnnLlmDrafter(dllm, PROMPTS[2]).propose([3, other], 2)
    assert again.tokens == fresh.tokens


@pytest.mark.parametrize("family", ["qwen3_asr", "qwen2_audio", "qwen2_5_omni", "llama"])
def test_families_mnn_cannot_run_get_one_clear_line(family):
    with pytest.raises(MnnLlmError) as err:
        refuse(family)
    msg = str(err.value)
    assert "\n" not in msg and family in msg and "engine mnn" in msg
    if family == "qwen3_asr":
        assert "llmexport 0.0.5 has no qwen3_asr exporter" in msg


def test_missing_export_file_names_it(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(MnnLlmError, match=r"llm\.mnn; re-export with"):
        load_llm(tmp_path)


@pytest.mark.parametrize("build", [tiny_qwen2_audio, tiny_omni_thinker])
def test_llmexport_cannot_export_the_audio_families(build, tmp_path):
    """The measured reason the audio families are refused: llmexport 0.0.5 fails to load them under
    transformers 5. If a new llmexport succeeds, this fails and the MNN.llm path can be wired."""
    model = build()
    model.save_pretrained(tmp_path / "m")
    byte_tokenizer({}).save_pretrained(tmp_path / "m")
    with pytest.raises(MnnLlmError, match="'NoneType' object has no attribute 'weight'"):
        run_llmexport(tmp_path / "m", tmp_path / "out")
    family = "qwen2_audio" if build is tiny_qwen2_audio else "qwen2_5_omni"
    with pytest.raises(MnnLlmError, match=f"engine mnn: cannot run {family}: llmexport 0.0.5 cannot load it"):
        export_llm(tmp_path / "m")
    cfg = {"name": "pair", "engine": "mnn", "target": {"name": "t", "family": family}}
    with pytest.raises(EngineConfigError, match=f"engine mnn cannot run target t \\({family}\\): llmexport"):
        check_engine(cfg)
