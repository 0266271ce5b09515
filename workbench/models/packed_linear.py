"""Packed linear kernels: cheaper multi-row decoder forwards on CPU, chosen per width (Appendix D.2).

With torch's plain ``F.linear`` a Whisper-base verify of a few rows can cost far more than one row:
MKL's sgemm takes a slow path for a few rows against a wide weight (the 51,865-row output
projection). oneDNN's linear on a weight reordered once into its blocked layout ("packed") runs
those rows much faster, and loses at one or two rows on some CPUs. Which kernel wins at which width
differs between CPUs, so nothing here is a constant: ``PackedLinear`` keeps both kernels and asks a
shared ``KernelSwitch`` which one a forward of R rows takes -- the kernel plan fitted by this
machine's calibration (``models.kernel_plan``), a forced kernel while calibration measures both,
or, with no plan, the configured ``kernels`` (``plain`` | ``packed``).

Packed rows do not depend on how many rows share the call; a K-wide verify's logits equal K single
steps' to float rounding. Exactness is still audited per run against target-only output
(Appendix C.4), never assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .kernel_plan import PACKED, PLAIN, KernelPlan

# plain: F.linear everywhere; packed: oneDNN-packed weights for every decoder forward; auto: per width,
# the kernel and padded width of this machine's calibrated plan (host profile ``kernel_plan``).
KERNELS = ("plain", "packed", "auto")


def packed_available() -> bool:
    """oneDNN (mkldnn) is built into this torch and usable on CPU."""
    return bool(torch.backends.mkldnn.is_available()) and hasattr(torch.ops.mkldnn, "_linear_pointwise")


@dataclass
class KernelSwitch:
    """Which kernel a forward of R rows takes; one switch is shared by all of a decoder's linears.

    ``forced`` (calibration's sweep) wins, then ``plan``, then ``default`` (the configured kernels;
    ``auto`` before any plan is installed runs plain, which the host profile's plan then replaces)."""

    default: str = PACKED
    plan: KernelPlan | None = None
    forced: str | None = None

    def kernel_for(self, rows: int) -> str:
        if self.forced is not None:
            return self.forced
        if self.plan is not None:
            return self.plan.kernel_for(rows)
        return PACKED if self.default == PACKED else PLAIN


class PackedLinear(torch.nn.Module):
    """An ``nn.Linear`` that also holds a oneDNN-packed copy of its weight; ``switch`` picks per forward."""

    def __init__(self, linear: torch.nn.Linear, switch: KernelSwitch | None = None) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias  # shared, not copied (tied embeddings stay tied)
        self.switch = switch or KernelSwitch()
        with torch.no_grad():
            # the batch hint only tunes the reorder; the packed weight serves any row count
            self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), 4),
                                 persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // x.shape[-1]
        if self.switch.kernel_for(rows) == PLAIN:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        y = torch.ops.mkldnn._linear_pointwise(x.reshape(rows, x.shape[-1]), self.packed, self.bias, "none", [], "")
        return y.reshape(*x.shape[:-1], self.out_features)


def pack_linears(module: torch.nn.Module, switch: KernelSwitch | None = None) -> int:
    """Replace every fp32 ``nn.Linear`` under ``module`` (in place) by a ``PackedLinear`` on ``switch``;
    returns the count. Raises if this torch has no oneDNN, naming the setting to change."""
    if not packed_available():
        raise RuntimeError("kernels=packed/auto needs torch built with oneDNN (mkldnn) on CPU; set the model's "
                           "kernels: plain")
    switch = switch or KernelSwitch()
    n = 0
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear and child.weight.dtype == torch.float32:
                setattr(parent, name, PackedLinear(child, switch))
                n += 1
    return n
