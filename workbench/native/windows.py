"""Host windows and the host pairing: consecutive demo clips packed into longer audio windows.

The demo clips are 1-8 s (3-28 words), far shorter than the paper's ~137-token windows, and a
short window is dominated by startup and drain. Packing consecutive clips (corpus order, a short
silence between them) up to ``max_seconds`` (< Whisper's 30 s input) gives windows of a few dozen
to ~100 target tokens. Calibration and evaluation windows come from disjoint clips: the corpus's
own stratified dev/test ``split``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from workbench.data.corpus import Clip, Corpus, build_demo_corpus, split

from .driver import NativeHost, NativeResult
from .producer import Placement, ProducerSpec

SAMPLE_RATE = 16000


@dataclass(frozen=True)
class AudioWindow:
    window_id: str
    clip_ids: tuple[str, ...]
    audio: np.ndarray

    @property
    def seconds(self) -> float:
        return len(self.audio) / SAMPLE_RATE


def pack_windows(corpus: Corpus, clips: Sequence[Clip], max_seconds: float = 25.0, gap_s: float = 0.3,
                 prefix: str = "w") -> list[AudioWindow]:
    """Greedily pack consecutive clips (given order) into windows of at most ``max_seconds``."""
    gap = np.zeros(int(gap_s * SAMPLE_RATE), dtype=np.float32)
    out: list[AudioWindow] = []
    parts: list[np.ndarray] = []
    ids: list[str] = []

    def flush() -> None:
        if ids:
            audio = np.concatenate([x for p in parts for x in (p, gap)][:-1]).astype(np.float32)
            out.append(AudioWindow(f"{prefix}{len(out):02d}", tuple(ids), audio))
            parts.clear()
            ids.clear()

    for clip in clips:
        audio = corpus.load_audio(clip)
        total = sum(len(p) + len(gap) for p in parts) + len(audio)
        if ids and total > max_seconds * SAMPLE_RATE:
            flush()
        parts.append(audio)
        ids.append(clip.window_id)
    flush()
    return out


def demo_windows(max_seconds: float = 25.0, dev_fraction: float = 0.25, seed: int = 0,
                 corpus: Corpus | None = None) -> tuple[list[AudioWindow], list[AudioWindow]]:
    """(calibration windows, evaluation windows) from the demo corpus's dev/test split."""
    corpus = corpus or build_demo_corpus()
    dev, test = split(corpus, dev_fraction, seed)
    return (pack_windows(corpus, dev, max_seconds, prefix="calib"),
            pack_windows(corpus, test, max_seconds, prefix="eval"))


# ------------------------------------------------------------------------ the host pairing
@dataclass
class HostSetup:
    """The real offline pair on this host: target, producer process spec, serial drafter."""

    target: Any  # WhisperBundle
    serial: Any  # WhisperBundle of the prefix-conditioned drafter (SD / ASP)
    producer: ProducerSpec
    verifier: Placement
    source: str  # the producer's source name in the profile
    serial_source: str
    budget: int
    max_output: int
    sd_width: int
    asp_cap: int

    @property
    def batch_tokens(self) -> int:
        return self.producer.batch_tokens

    def params(self, scheme: str) -> dict[str, Any]:
        return {"as2d": {"budget": self.budget}, "as2d_wo_bc": {}, "sd": {"width": self.sd_width},
                "asp": {"cap": self.asp_cap}, "as2d_wo_td": {"budget": self.budget}}.get(scheme, {})


def default_cpus() -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """Verifier on the first allowed CPU, producer on the second (None: OS default)."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return ((cpus[0],), (cpus[1],)) if len(cpus) >= 2 else (None, None)


def host_setup(model_cfg: Mapping[str, Any], *, producer_key: str = "drafter", serial_key: str = "serial_drafter",
               verifier: Placement | None = None, producer: Placement | None = None,
               sd_width: int | None = None, asp_cap: int = 15) -> HostSetup:
    """Load the pair named by a ``conf/model`` mapping (weights resolve offline).

    ``asp_cap`` 15 keeps ASP at physical K <= 16, the widths calibration measures (D.2.3 uses 14)."""
    from workbench.models.registry import ModelSpec, load_whisper_spec, resolve_weights

    vcpu, pcpu = default_cpus()
    tspec = ModelSpec.from_dict(model_cfg["target"])
    target = load_whisper_spec(tspec)
    pcfg = dict(model_cfg[producer_key])
    scfg = dict(model_cfg.get(serial_key) or pcfg)
    cross = pcfg.get("vocabulary") == "cross"
    tok = str(resolve_weights(tspec) / "tokenizer.json") if cross else None
    spec = ProducerSpec(drafter=pcfg, target_tokenizer=tok,
                        target_eos=target.protocol.eos_id, batch_tokens=int(pcfg.get("batch_tokens", 8)),
                        placement=producer or Placement(1, pcpu))
    budget = int(model_cfg.get("budget", 7))
    return HostSetup(target, load_whisper_spec(ModelSpec.from_dict(scfg)), spec, verifier or Placement(1, vcpu),
                     str(pcfg["name"]), str(scfg["name"]), budget, int(model_cfg.get("max_new_tokens", 224)),
                     sd_width or budget + 1, asp_cap)


# ------------------------------------------------------------------------ native episodes
SAMPLE_SCHEMA = {"window_id": pl.Utf8, "kind": pl.Utf8, "scheme": pl.Utf8, "width": pl.Int64,
                 "concurrent": pl.Boolean, "offset": pl.Int64, "rep": pl.Int64, "ms": pl.Float64,
                 "tokens": pl.Int64, "rounds": pl.Int64}


def sample(kind: str, window_id: str | None, **values: Any) -> dict[str, Any]:
    """One raw calibration sample row (columns: ``SAMPLE_SCHEMA``; absent fields are null)."""
    row = dict.fromkeys(SAMPLE_SCHEMA)
    row.update(kind=kind, window_id=window_id, **values)
    return row


@dataclass
class Episodes:
    rows: list[dict[str, Any]] = field(default_factory=list)  # one "episode" row per measured run
    results: list[tuple[str, str, int, NativeResult]] = field(default_factory=list)  # (window, scheme, rep, run)

    def rounds(self) -> pl.DataFrame:
        out = []
        for wid, scheme, rep, r in self.results:
            for rec in r.records:
                out.append({**rec.as_row(), "window_id": wid, "config": scheme, "rep": rep, "T": r.time})
        return pl.DataFrame(out, schema_overrides={"chain": pl.List(pl.Int64), "provenance": pl.List(pl.Int64),
                                                   "committed": pl.List(pl.Int64), "k1_reason": pl.Utf8,
                                                   "cursor_before": pl.Int64, "cursor_after": pl.Int64,
                                                   "next_root": pl.Int64}, infer_schema_length=None)


def run_scheme(host: NativeHost, setup: HostSetup, window: AudioWindow, scheme: str) -> NativeResult:
    from workbench.models.whisper import WhisperTarget, whisper_drafter

    serial = scheme in ("sd", "asp", "as2d_wo_td")
    drafter = whisper_drafter(setup.serial, window.audio) if serial else None  # its prefill: off the clock
    return host.run(window.window_id, scheme, WhisperTarget(setup.target, window.audio), audio=window.audio,
                    max_output=setup.max_output, drafter=drafter, params=setup.params(scheme))


def native_episodes(setup: HostSetup, windows: Sequence[AudioWindow], schemes: Sequence[str], reps: int,
                    warmup: int = 1, host: NativeHost | None = None) -> Episodes:
    """Warm-up then ``reps`` measured runs per scheme and window, order alternating per repetition."""
    if host is None:
        with NativeHost(setup.producer, setup.verifier) as h:
            return native_episodes(setup, windows, schemes, reps, warmup, h)
    ep = Episodes()
    for w in windows:
        for rep in range(-warmup, reps):
            for scheme in (schemes if rep % 2 == 0 else list(reversed(schemes))):
                r = run_scheme(host, setup, w, scheme)
                if rep < 0:
                    continue
                ep.results.append((w.window_id, scheme, rep, r))
                ep.rows.append(sample("episode", w.window_id, scheme=scheme, rep=rep, ms=1000 * r.time,
                                      tokens=len(r.output), rounds=len(r.records)))
                spans = [s for s in r.stages if s[0] == "producer" and s[4] == -1]
                if spans:  # producer startup: from the clock's zero to its first forward (process wake-up)
                    ep.rows.append(sample("producer_startup", w.window_id, scheme=scheme, rep=rep,
                                          ms=1000 * min(s[2] for s in spans)))
    return ep
