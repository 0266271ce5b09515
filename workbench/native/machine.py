"""This machine as a host profile sees it: the fingerprint fields that change a profile's costs.

CPU model, core count, usable threads, torch version, engine and the target's kernels, and the
calibration's version (``fingerprint.py`` compares and caches profiles by them).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .producer import ALLOWED_CPUS

FIELDS = ("cpu", "cores", "threads", "torch", "engine", "calibration")
# Bump when calibration measures something new that replay prices (2: per-width anchors, the verifier
# beside the producer from live As2d calls, R_LIVE-V; 3: MNN modules run the threads they are given,
# mnn.runtime.load_module; 4: the per-width kernel plan, and the verifier costs measured under it; 5: a word
# the producer publishes at once shares its interval among its tokens, episodes.publication_rows; 6: K1's
# context slope from the target-only runs, live width prices moved to ref_tokens, native.context; 7: As²d's
# own drift anchor, anchor_as2d_ms; 8: the producer's own drift anchor, anchor_producer_ms; 9: the verifier
# beside the producer from only the As2d calls that started while it ran, fit.beside_producer;
# 10: a width's sweep slope only where it is significant, context.significant_line; 11: the producer priced
# per drafter forward, fit R_OPS; 12: its prompt prefill before the clock, R_PREFILL; 13: As²d's live calls
# on single dev clips too, and the line of calls beside the producer, context.concurrent_lines; 14: K1's slope
# as Sen's slope within runs, kept only past its rank interval, context.within_run_slope): older cached
# profiles are then measured again.
CALIBRATION_VERSION = 14

# CPUs this process may use, read once at import (``producer.ALLOWED_CPUS``): calibration and runs pin
# themselves to one core (placements), which must not change which machine this is.
_THREADS = len(ALLOWED_CPUS) or os.cpu_count() or 1


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def machine_fingerprint(engine: str = "torch") -> dict[str, Any]:
    """This machine as the host profile sees it: what changes a profile's costs."""
    import torch

    return {"cpu": cpu_model(), "cores": os.cpu_count() or 1, "threads": _THREADS,
            "torch": str(torch.__version__), "engine": engine, "calibration": CALIBRATION_VERSION}


def engine_label(model_cfg: Mapping[str, Any]) -> str:
    """The engine as costs see it: ``torch``, ``mnn``, or ``torch+packed`` / ``torch+auto`` when the
    target's linears use packed kernels or the calibrated per-width plan (``models.packed_linear``:
    other verify costs, so another profile)."""
    engine = str(model_cfg.get("engine") or "torch")
    kernels = (model_cfg.get("target") or {}).get("kernels") or "plain"
    return engine if engine != "torch" or kernels == "plain" else f"{engine}+{kernels}"


__all__ = ["CALIBRATION_VERSION", "FIELDS", "cpu_model", "engine_label", "machine_fingerprint"]
