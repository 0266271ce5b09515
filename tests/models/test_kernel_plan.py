"""The kernel plan: fitted from measured costs, read from the host profile, and a padded forward that
leaves logits and the KV cache as the unpadded one does (real tiny Whisper from a config)."""

from __future__ import annotations

import pytest
import torch
import yaml

from tests.models.conftest import tiny_audio, tiny_whisper
from workbench.models.kernel_plan import KernelChoice, KernelPlan, fit_plan
from workbench.models.whisper import WhisperDecoderState, WhisperTarget, pack_decoder, use_kernel_plan
from workbench.replay.profile import DEVICE_DIR, ProfileError, parse_profile

# A host whose plain kernel is cheap at one row, slow at two and three, and packed wins from four rows.
COSTS = {("plain", 1): 16.7, ("plain", 2): 26.6, ("plain", 3): 35.3, ("plain", 4): 40.0, ("plain", 8): 60.0,
         ("packed", 1): 18.0, ("packed", 2): 20.0, ("packed", 3): 22.0, ("packed", 4): 14.0, ("packed", 8): 16.9}


def test_fit_takes_the_cheaper_kernel_and_pads_to_a_cheaper_wider_width():
    plan = fit_plan(COSTS)
    assert plan.choices[4] == KernelChoice("packed", 4, 14.0)
    assert plan.choices[1] == KernelChoice("plain", 4, 14.0)  # one token rides in the packed K4 forward
    assert plan.choices[2].rows == plan.choices[3].rows == 4
    assert plan.choices[8] == KernelChoice("packed", 8, 16.9)
    # a wider width within the noise margin is not worth padding to
    near = fit_plan({("plain", 1): 10.0, ("plain", 2): 9.9})
    assert near.choices[1].rows == 1
    flat = fit_plan({("plain", 1): 10.0, ("packed", 1): 12.0, ("plain", 2): 20.0, ("packed", 2): 15.0})
    assert flat.choices[1] == KernelChoice("plain", 1, 10.0) and flat.choices[2].kernel == "packed"


def _profile_with(plan: dict) -> dict:
    raw = yaml.safe_load((DEVICE_DIR / "host.yaml").read_text())
    raw["rules"]["R_KERNEL"] = "test rule"
    raw["kernel_plan"] = plan
    return raw


def _entry(kernel: str, rows: int) -> dict:
    return {"kernel": kernel, "rows": rows, "ms": {"v": 14.0, "derived": "R_KERNEL"}}


def test_the_target_takes_the_plan_of_its_host_profile():
    fitted = fit_plan(COSTS)
    prof = parse_profile(_profile_with({k: _entry(c.kernel, c.rows) for k, c in fitted.choices.items()}))
    assert prof.kernel_plan.as_dict() == fitted.as_dict()
    assert prof.provenance["kernel_plan.1.ms"] == "derived: test rule"  # every entry carries its provenance
    bundle = tiny_whisper()
    pack_decoder(bundle, "auto")
    rows_seen = []
    bundle.model.proj_out.register_forward_hook(lambda m, x, y: rows_seen.append(x[0].shape[1]))
    use_kernel_plan(bundle, prof.kernel_plan)
    t = WhisperTarget(bundle, audio=tiny_audio())
    root = t.prefill()
    rows_seen.clear()
    t.verify(root, [])  # one token: the plan runs it padded to four rows
    assert rows_seen == [4]
    t.keep(0)
    assert t.state.length == len(bundle.protocol.prompt_ids) + 1


@pytest.mark.parametrize(("plan", "field"), [
    ({1: _entry("fast", 1)}, "kernel_plan.1.kernel"),
    ({1: _entry("packed", 4)}, "kernel_plan.1.rows"),  # padded to a width the plan does not price
    ({2: _entry("packed", 1)}, "kernel_plan.2.rows"),
])
def test_a_bad_plan_names_its_field(plan, field):
    with pytest.raises(ProfileError, match=field.replace(".", r"\.")):
        parse_profile(_profile_with(plan))


def _decoder(plan: KernelPlan | None) -> WhisperDecoderState:
    bundle = tiny_whisper(seed=3)
    pack_decoder(bundle, "auto")
    use_kernel_plan(bundle, plan)
    feats = bundle.features(tiny_audio())
    return WhisperDecoderState(bundle, feats)


@pytest.mark.parametrize("kernel", ["plain", "packed"])
def test_padded_forward_equals_the_unpadded_one_logits_and_kv_cache(kernel):
    plain = KernelPlan({k: KernelChoice(kernel, k) for k in range(1, 9)})
    padded = KernelPlan({k: KernelChoice(kernel, 8) for k in range(1, 9)})  # every forward runs eight rows
    a, b = _decoder(plain), _decoder(padded)
    for st in (a, b):
        st.forward([1, 2, 5])  # a prompt of three rows (padded to eight in b)
    for ids in ([7], [9, 11], [4, 6, 8, 10, 12]):
        la, lb = a.forward(ids), b.forward(ids)
        assert la.shape == lb.shape == (len(ids), 96)
        torch.testing.assert_close(lb, la, rtol=1e-5, atol=1e-5)
        assert torch.equal(la.argmax(-1), lb.argmax(-1))
        assert a.length == b.length
        ca, cb = a.cache.self_attention_cache, b.cache.self_attention_cache
        assert ca.get_seq_length() == cb.get_seq_length() == a.length
        for layer_a, layer_b in zip(ca.layers, cb.layers, strict=True):
            torch.testing.assert_close(layer_b.keys, layer_a.keys, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(layer_b.values, layer_a.values, rtol=1e-5, atol=1e-5)
    a.crop(2)
    b.crop(2)  # rollback after a padded forward works as after an unpadded one
    torch.testing.assert_close(b.forward([13]), a.forward([13]), rtol=1e-5, atol=1e-5)


def test_padding_never_runs_past_the_decoder_positions():
    st = _decoder(KernelPlan({1: KernelChoice("packed", 8), 8: KernelChoice("packed", 8)}))
    st.forward(list(range(4, 4 + 60)))  # 60 of the tiny decoder's 64 positions
    out = st.forward([5])  # eight rows would not fit: unpadded
    assert out.shape == (1, 96) and st.length == 61
