"""Whisper-base verify cost per width, plain against packed linear kernels, side by side
(packed kernels, ``models/packed_linear.py``).

One thread, the real offline weights, a 40-token decoder prefix; each width K is one decoder forward
over K tokens followed by a rollback, timed alternately on both targets (median of ``--reps``).
Prints ms per forward and the ratio to that kernel's own single step. Never asserted in a test.

    python benchmarks/verify_kernels.py [--reps 30] [--widths 1 2 4 8 16]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from workbench.models.registry import ModelSpec, load_model_config, load_whisper_spec
from workbench.models.whisper import WhisperDecoderState


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--widths", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    args = ap.parse_args()
    torch.set_num_threads(1)
    spec = load_model_config("whisper_base")["target"]
    states = {}
    for kernels in ("plain", "packed"):
        bundle = load_whisper_spec(ModelSpec.from_dict({**spec, "kernels": kernels}))
        feats = torch.randn(1, bundle.config.num_mel_bins, 2 * bundle.config.max_source_positions) * 0.1
        st = WhisperDecoderState(bundle, feats)
        st.forward(bundle.protocol.prompt_ids + [440] * 40)
        states[kernels] = st
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.reps + 1):  # the first pass warms up and is dropped
        for k in args.widths:
            for kernels, st in states.items():
                t0 = time.perf_counter()
                st.forward([440] * k)
                times.setdefault((kernels, k), []).append(1000 * (time.perf_counter() - t0))
                st.crop(k)
    med = {key: statistics.median(v[1:]) for key, v in times.items()}
    print(f"{'K':>3} {'plain ms':>9} {'x K1':>6} {'packed ms':>10} {'x K1':>6} {'packed/plain':>13}")
    for k in args.widths:
        p, q = med[("plain", k)], med[("packed", k)]
        p1, q1 = med[("plain", 1)], med[("packed", 1)]
        print(f"{k:>3} {p:>9.2f} {p / p1:>6.2f} {q:>10.2f} {q / q1:>6.2f} {q / p:>13.2f}")


if __name__ == "__main__":
    main()
