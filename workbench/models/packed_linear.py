"""Packed linear kernels: cheaper K-wide verification on CPU.

With torch's plain ``F.linear`` a few rows against a wide weight take MKL's slow sgemm path, so a
K-wide verify costs well over one target step on a CPU host; oneDNN's linear on a weight reordered
once into its blocked layout ("packed") does not (docs/adaptive.md, "Packed kernels").

``PackedLinear`` keeps both: forwards of ``min_rows`` rows or more (wide verify chains, prompts) use
the packed weight; narrower ones keep the plain kernel, so target-only loses nothing. The
crossover is measured on the whole Whisper-base decoder by ``benchmarks/verify_kernels.py`` (one
thread): packed wins from K = 4 on the CPU that chose ``MIN_ROWS = 4``; another CPU may differ, and
the script prints its own crossover.
Packed rows do not depend on how many rows share the call; a K-wide verify's logits equal K single
steps' to float rounding. Exactness is still audited per run against target-only output
(Appendix C.4), never assumed.
"""

from __future__ import annotations

import torch

KERNELS = ("plain", "packed")
MIN_ROWS = 4  # narrowest forward that runs packed (measured above; plain wins below it)


def packed_available() -> bool:
    """oneDNN (mkldnn) is built into this torch and usable on CPU."""
    return bool(torch.backends.mkldnn.is_available()) and hasattr(torch.ops.mkldnn, "_linear_pointwise")


class PackedLinear(torch.nn.Module):
    """An ``nn.Linear`` whose multi-row forwards use a oneDNN-packed copy of its weight."""

    def __init__(self, linear: torch.nn.Linear, min_rows: int = MIN_ROWS) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias  # shared, not copied (tied embeddings stay tied)
        self.min_rows = min_rows
        with torch.no_grad():
            # the batch hint only tunes the reorder; the packed weight serves any row count
            self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), 4),
                                 persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // x.shape[-1]
        if rows < self.min_rows:
            return torch.nn.functional.linear(x, self.weight, self.bias)
        y = torch.ops.mkldnn._linear_pointwise(x.reshape(rows, x.shape[-1]), self.packed, self.bias, "none", [], "")
        return y.reshape(*x.shape[:-1], self.out_features)


def pack_linears(module: torch.nn.Module, min_rows: int = MIN_ROWS) -> int:
    """Replace every fp32 ``nn.Linear`` under ``module`` (in place) by a ``PackedLinear``; returns the
    count. Raises if this torch has no oneDNN, naming the setting to change."""
    if not packed_available():
        raise RuntimeError("kernels=packed needs torch built with oneDNN (mkldnn) on CPU; set the model's "
                           "kernels: plain")
    n = 0
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear and child.weight.dtype == torch.float32:
                setattr(parent, name, PackedLinear(child, min_rows))
                n += 1
    return n
