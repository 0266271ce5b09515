"""Packed linear kernels: same numbers as ``F.linear``, rows independent of the call's width, the
kernel each forward takes chosen by one shared switch, and only the layers and settings they apply to."""

from __future__ import annotations

import pytest
import torch

from tests.models.conftest import tiny_audio, tiny_whisper
from workbench.models.kernel_plan import KernelChoice, KernelPlan
from workbench.models.packed_linear import KernelSwitch, PackedLinear, pack_linears
from workbench.models.registry import ModelSpec, check_kernels, load_audio_lm_spec
from workbench.models.whisper import WhisperTarget, pack_decoder


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("rows", [4, 5, 8, 17])
def test_packed_rows_equal_plain_linear(bias, rows):
    torch.manual_seed(rows)
    lin = torch.nn.Linear(48, 200, bias=bias)
    x = torch.randn(1, rows, 48)
    packed = PackedLinear(lin)
    y = packed(x)
    assert y.shape == (1, rows, 200)
    torch.testing.assert_close(y, lin(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [1, 2, 3, 6])
def test_plain_choice_takes_the_plain_kernel_bit_for_bit(rows):
    lin = torch.nn.Linear(48, 200)
    x = torch.randn(1, rows, 48)
    # the plan says plain at these widths (packed from four rows): exactly F.linear
    plan = KernelPlan({k: KernelChoice("plain" if k in (1, 2, 3, 6) else "packed", k) for k in range(1, 9)})
    y = PackedLinear(lin, KernelSwitch(plan=plan))(x)
    assert torch.equal(y, torch.nn.functional.linear(x, lin.weight, lin.bias))


def test_switch_order_forced_then_plan_then_configured_kernels():
    plan = KernelPlan({1: KernelChoice("plain", 1), 2: KernelChoice("packed", 2)})
    assert KernelSwitch("packed").kernel_for(1) == "packed"
    assert KernelSwitch("auto").kernel_for(5) == "plain"  # auto before any plan: plain, never a guessed constant
    sw = KernelSwitch("packed", plan)
    assert [sw.kernel_for(r) for r in (1, 2, 40)] == ["plain", "packed", "packed"]  # beyond the plan: its widest
    sw.forced = "plain"
    assert sw.kernel_for(2) == "plain"


def test_packed_row_does_not_depend_on_how_many_rows_share_the_call():
    # what makes a K-wide verify equal K single steps on the packed path
    torch.manual_seed(0)
    packed = PackedLinear(torch.nn.Linear(512, 1000), KernelSwitch("packed"))
    x = torch.randn(8, 512)
    full = packed(x)
    for k in (1, 2, 4, 5):
        assert torch.equal(packed(x[:k]), full[:k]), k


def test_pack_linears_replaces_fp32_linears_and_shares_their_weights():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(16, 4)))
    first = model[0].weight
    assert pack_linears(model) == 2
    assert isinstance(model[0], PackedLinear) and isinstance(model[2][0], PackedLinear)
    assert model[0].weight is first
    assert pack_linears(model) == 0  # already packed: nothing left to replace


def test_packed_whisper_decoder_keeps_tied_output_projection_and_greedy():
    plain = tiny_whisper()
    packed = tiny_whisper()
    # per layer: self q/k/v/o, cross q/k/v/o, fc1, fc2; then the output projection. The encoder keeps its own.
    assert pack_decoder(packed) == 2 * 10 + 1
    assert not any(isinstance(m, PackedLinear) for m in packed.model.model.encoder.modules())
    assert packed.model.proj_out.weight is packed.model.model.decoder.embed_tokens.weight
    out = []
    for bundle in (plain, packed):
        t = WhisperTarget(bundle, audio=tiny_audio())
        root = t.prefill()
        out.append((root, t.verify(root, [5, 7, 9]), t.last_logits.clone()))
    assert out[0][:2] == out[1][:2]
    torch.testing.assert_close(out[0][2], out[1][2], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("over", "needle"), [
    ({"kernels": "fast"}, "unknown kernels 'fast'"),
    ({"kernels": "packed", "quantize": "dynamic_int8"}, "quantize=dynamic_int8"),
    ({"kernels": "packed", "dtype": "bfloat16"}, "dtype=bfloat16"),
])
def test_bad_kernels_setting_is_one_clear_line(over, needle):
    spec = ModelSpec.from_dict({"name": "whisper-base", "family": "whisper", **over})
    with pytest.raises(ValueError, match=needle) as err:
        check_kernels(spec)
    assert "kernels" in str(err.value)


def test_packed_kernels_on_an_audio_lm_are_refused_before_loading():
    spec = ModelSpec.from_dict({"name": "qwen3-asr", "family": "qwen3_asr", "kernels": "packed",
                                "local_path": "/nonexistent"})
    with pytest.raises(ValueError, match="whisper only"):
        load_audio_lm_spec(spec)
