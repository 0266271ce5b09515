"""Differential test: the C++ runner (virtual-clock reference mode) against the Python replay engine.

Both sides get the same windows, schemes, budgets, profiles and drain rule; they must produce
identical round records (root, chain, provenance, k1 reason, accepted, committed, cursors, work)
and stage intervals, with every time equal to 1e-9. The generated cases cover random and noisy
producers, insertions, deletions, repeated tokens (tiny vocabularies), empty producers, EOS in
every place (first token, mid-stream, missing), capped references, zero-token producer operations,
measured operation times, the static and the dynamic producer clock, and budgets 1-24.

All cases of a test go to ONE runner process (``--batch``: one request per line), so ~1,200 cases
take seconds. Any difference is a bug in one side; a case that once differed is pinned below.
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from phone_runner.payloads import pricing_from_profile, window_payload
from phone_runner.protocol import HOST_ONLY_SCHEMES, validate_line
from phone_runner.reference import run_window
from phone_runner.runner import runner_binary
from workbench.decoding import CATALOG, ROUND_COLUMNS, scheme_spec
from workbench.replay.engine import ReplayConfig, replay
from workbench.replay.profile import DEVICE_DIR, DeviceProfile, parse_profile
from workbench.replay.trajectory import DraftTable, SourceTrack, Window

TOL = 1e-9
N_CASES = 1200


# ------------------------------------------------------------------------------------------
# profiles: the static producer clock (factor 1), a dynamic one (producer slowed while the
# target runs), concurrent verify costs above idle, and a profile with no per-round overheads


def _raw(name: str) -> dict[str, Any]:
    return yaml.safe_load((DEVICE_DIR / f"{name}.yaml").read_text())


def _profiles() -> dict[str, DeviceProfile]:
    out = {"k70_pro": parse_profile(_raw("k70_pro"), "k70_pro"),
           "redmi_note_9_pro": parse_profile(_raw("redmi_note_9_pro"), "redmi_note_9_pro")}
    dyn = _raw("k70_pro")
    dyn["name"] = "k70_dynamic"
    dyn["verifier"]["concurrent"]["factor"] = {"v": 1.083, "source": "conformance test"}
    for src in dyn["sources"].values():
        src["concurrent_factor"] = {"v": 1.37, "source": "conformance test"}
    out["k70_dynamic"] = parse_profile(dyn, "k70_dynamic")
    bare = _raw("xiaomi_14")
    bare["name"] = "xiaomi_14_bare"
    for key in ("loop_residual_ms", "queue_ms", "alignment_ms"):
        bare[key] = {"v": 0.0, "source": "conformance test"}
    bare["sources"]["qwen"]["startup_ms"] = {"v": 12.5, "source": "conformance test"}
    out["xiaomi_14_bare"] = parse_profile(bare, "xiaomi_14_bare")
    return out


# ------------------------------------------------------------------------------------------
# windows


def _noisy(rng: np.random.Generator, ref: list[int], vocab: int, p_sub: float, p_ins: float, p_del: float
           ) -> list[int]:
    out: list[int] = []
    for t in ref:
        if rng.random() >= p_del:
            out.append(int(rng.integers(0, vocab)) if rng.random() < p_sub else t)
        if rng.random() < p_ins:
            out.append(int(rng.integers(0, vocab)))
    return out


def _ops(rng: np.random.Generator, n: int, chunked: bool) -> list[int]:
    ops: list[int] = []
    left = n
    while left > 0:
        k = int(rng.integers(0, 7)) if chunked else (0 if rng.random() < 0.05 else 1)
        k = min(k, left)
        ops.append(k)
        left -= k
    if rng.random() < 0.2:
        ops.append(0)  # a final operation that emits nothing
    return ops


KINDS = ("random", "noisy", "insertions", "deletions", "repeated", "empty_producer", "eos_placement", "clean")


def make_window(seed: int, kind: str) -> Window:
    rng = np.random.default_rng([20261130, seed])
    vocab = int(rng.choice([2, 3])) if kind == "repeated" else int(rng.choice([5, 40, 4096]))
    eos: int | None = None if rng.random() < 0.15 else 0
    n = int(rng.choice([1, 2, 3])) if rng.random() < 0.08 else int(rng.integers(4, 70))
    lo = 1 if (eos == 0 and vocab > 1) else 0
    ref = [int(x) for x in rng.integers(lo, vocab, size=n)] if vocab > lo else [0] * n
    if eos is not None and rng.random() < 0.85:
        ref[-1] = eos  # ends at EOS (otherwise the cap ends it)
    ended = eos is not None and ref[-1] == eos
    max_output = n + int(rng.integers(0, 6)) if ended else n
    p = {"random": (0.5, 0.05, 0.05), "noisy": (0.3, 0.1, 0.1), "insertions": (0.05, 0.35, 0.0),
         "deletions": (0.05, 0.0, 0.35), "repeated": (0.2, 0.1, 0.1), "clean": (0.0, 0.0, 0.0),
         "eos_placement": (0.1, 0.05, 0.05), "empty_producer": (0.1, 0.05, 0.05)}[kind]
    sources: dict[str, SourceTrack] = {}
    for name, chunked, conf in (("qwen", False, True), ("parakeet", True, False)):
        toks = [] if kind == "empty_producer" and rng.random() < 0.7 else _noisy(rng, ref, vocab, *p)
        if kind == "eos_placement" and eos is not None and toks:
            toks[int(rng.integers(0, len(toks)))] = eos  # EOS somewhere in the stream, maybe early
            if rng.random() < 0.5:
                toks = toks[: int(rng.integers(0, len(toks) + 1))]
        if rng.random() < 0.1:
            toks = toks[: int(rng.integers(0, len(toks) + 1))]  # the producer stops early
        ops = _ops(rng, len(toks), chunked)
        op_ms = tuple(float(x) for x in rng.uniform(0.5, 60.0, len(ops))) if rng.random() < 0.25 else None
        confs = tuple(float(x) for x in rng.random(len(toks))) if conf else None
        sources[name] = SourceTrack(name, tuple(toks), confs, tuple(ops), op_ms)
    rows, crows = [], []
    for c in range(1, n):
        cont = ref[c:] + [int(x) for x in rng.integers(0, vocab, 24)]
        draft = _noisy(rng, cont, vocab, p[0] * 0.7, p[1] * 0.3, p[2] * 0.3)[: int(rng.integers(0, 25))]
        rows.append(draft)
        crows.append([float(x) for x in rng.random(len(draft))])
    width = max((len(r) for r in rows), default=0)
    arr = np.full((len(rows), width), -1, dtype=np.int64)
    carr = np.zeros((len(rows), width))
    for i, (r, cr) in enumerate(zip(rows, crows, strict=True)):
        arr[i, : len(r)] = r
        carr[i, : len(cr)] = cr
    drafts = DraftTable(arr, carr, np.array([len(r) for r in rows], dtype=np.int64))
    return Window(f"case-{seed:05d}-{kind}", kind, tuple(ref), eos, vocab, max_output, drafts, sources,
                  synthetic=True).validate("<conformance>")


def make_config(rng: np.random.Generator, widest: int) -> tuple[ReplayConfig, str]:
    """A random configuration whose widest physical width the profile prices (``widest``)."""
    scheme = str(rng.choice(SCHEMES))
    threshold = float(rng.choice([0.0, 0.2, 0.4, 0.4, 0.7, 1.0]))
    span = int(rng.choice([1, 2, 4, 8, 8, 12]))
    lookback = None if rng.random() < 0.6 else int(rng.integers(1, 10))
    budget = int(rng.integers(1, min(24, widest - 1) + 1))
    drain = "full" if rng.random() < 0.15 else "boundary"
    if scheme == "target_only":
        return ReplayConfig(scheme), drain
    if scheme == "sd":
        return ReplayConfig(scheme, width=int(rng.integers(2, min(25, widest) + 1))), drain
    if scheme == "asp":
        return ReplayConfig(scheme, threshold=threshold, cap=budget), drain
    if scheme == "as2d_wo_td":
        return ReplayConfig(scheme, threshold=threshold, budget=budget), drain
    source = "parakeet" if scheme == "as2d" and rng.random() < 0.3 else "qwen"  # w/o BC needs confidences
    if scheme == "as2d_online":
        return ReplayConfig(scheme, source=source, budget=budget, span=span, lookback=lookback, threshold=threshold,
                            decay=float(rng.choice([0.5, 0.9, 1.0])), **_anchor(rng)), drain
    if scheme == "as2d":
        gate = {"threshold": None if rng.random() < 0.3 else threshold} if "threshold" in AS2D_SETTINGS else {}
        return ReplayConfig(scheme, source=source, budget=budget, span=span, lookback=lookback, **gate,
                            **_anchor(rng)), drain
    return ReplayConfig(scheme, source=source, threshold=threshold, cap=budget, span=span, lookback=lookback,
                        **_anchor(rng)), drain


def _anchor(rng: np.random.Generator) -> dict[str, str]:
    """The anchor order after a rejection, where the catalog has the setting (C.3)."""
    if "anchor_order" not in AS2D_SETTINGS:
        return {}
    return {"anchor_order": "correction_first" if rng.random() < 0.35 else "next_token"}


AS2D_SETTINGS = scheme_spec("as2d").defaults  # As²d gained a confidence threshold (D.1)
# The runner mirrors the paper's six schemes; as2d_online and the adaptive variants are host-only (protocol.py).
SCHEMES = ("target_only", "sd", "asp", "as2d", "as2d_wo_td", "as2d_wo_bc")


@dataclass
class Case:
    case_id: str
    window: Window
    config: ReplayConfig
    profile: DeviceProfile
    drain: str


def request(case: Case) -> dict[str, Any]:
    cfg = case.config
    return {"v": 1, "run_id": case.case_id, "mode": "run",
            "scheme": {"name": cfg.scheme, "source": cfg.source, "config": cfg.label, "settings": cfg.settings},
            "engine": {"kind": "reference", "clock": "virtual", "drain": case.drain}, "models": {},
            "producer": {"source": cfg.source, "batch_tokens": 8}, "windows": [window_payload(case.window)],
            "repetitions": 1, "warmups": 0, "max_output": case.window.max_output,
            "pricing": pricing_from_profile(case.profile), "output": "unused.jsonl"}


def generated_cases(n: int) -> list[Case]:
    profiles = list(_profiles().values())
    rng = np.random.default_rng(16)
    cases = []
    for i in range(n):
        window = make_window(i, KINDS[i % len(KINDS)])
        profile = profiles[i % len(profiles)]
        cfg, drain = make_config(rng, max(profile.verifier.idle_ms))
        cases.append(Case(window.window_id, window, cfg, profile, drain))
    return cases


# ------------------------------------------------------------------------------------------
# running both sides


def run_batch(tmp: Path, cases: list[Case], runner: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """All ``cases`` through one runner process (``runner``: its argv, default the host build)."""
    path = tmp / "cases.jsonl"
    path.write_text("".join(json.dumps(request(c)) + "\n" for c in cases))
    done = subprocess.run([*(runner or [str(runner_binary())]), "--batch", str(path)], capture_output=True, text=True,
                          timeout=600)
    by_case: dict[str, list[dict[str, Any]]] = {}
    current = None
    for i, text in enumerate(done.stdout.splitlines(), 1):
        obj = validate_line(text, i, "as2d_runner --batch")
        if obj["type"] == "header":
            current = obj["run_id"]
            by_case[current] = []
        by_case[current].append(obj)
    assert done.returncode == 0, f"runner exit {done.returncode}: {done.stdout[-800:]} {done.stderr[-800:]}"
    return by_case


def _near(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=0.0, abs_tol=TOL)


def differences(case: Case, lines: list[dict[str, Any]]) -> list[str]:
    """Every way the runner's lines differ from the Python replay of the same case."""
    py = replay(case.window, case.config, case.profile, drain=case.drain)  # type: ignore[arg-type]
    where = f"{case.case_id} {case.config.label} {case.profile.name} drain={case.drain}"
    kinds = [obj["type"] for obj in lines]
    if kinds[-1] != "summary":
        return [f"{where}: runner ended with {lines[-1]}"]
    rounds = [obj for obj in lines if obj["type"] == "round"]
    out: list[str] = []
    if len(rounds) != len(py.records):
        out.append(f"{where}: {len(rounds)} rounds in C++, {len(py.records)} in Python")
    for c, p in zip(rounds, py.records, strict=False):
        row = p.as_row()
        for col in ROUND_COLUMNS:
            a, b = c[col], row[col]
            same = _near(a, b) if col.startswith("t_") else a == b
            if not same:
                out.append(f"{where}: round {row['round']} field {col}: C++ {a!r} != Python {b!r}")
                break
    stages = [obj for obj in lines if obj["type"] == "stage"]
    if len(stages) != len(py.stages):
        out.append(f"{where}: {len(stages)} stage intervals in C++, {len(py.stages)} in Python")
    for c, (res, stage, start, end, rnd) in zip(stages, py.stages, strict=False):
        if (c["resource"], c["stage"], c["round"]) != (res, stage, rnd) or not (_near(c["start"], start)
                                                                               and _near(c["end"], end)):
            out.append(f"{where}: stage {c} != Python {(res, stage, start, end, rnd)}")
            break
    if case.config.spec.decoupled:
        out += publication_differences(case, lines, py, where)
    win = next(obj for obj in lines if obj["type"] == "window")
    if win["tokens"] != py.tokens or not _near(win["time"], py.time) or not _near(win["t_eos"], py.t_eos):
        out.append(f"{where}: window tokens/time/t_eos C++ {win['tokens']}/{win['time']}/{win['t_eos']} "
                   f"!= Python {py.tokens}/{py.time}/{py.t_eos}")
    return out


def publication_differences(case: Case, lines: list[dict[str, Any]], py: Any, where: str) -> list[str]:
    """The producer's batches up to its stop: same offsets, tokens and publish times (1e-9)."""
    _, buf = run_window(case.window, case.config, case.profile, case.drain)
    stop = max((end for res, _, _, end, _ in py.stages if res == "producer"), default=0.0)
    theirs = [b for b in buf if b.publish_time <= stop]  # a static plan also holds batches never reached
    ours = [obj for obj in lines if obj["type"] == "publication"]
    if len(ours) != len(theirs):
        return [f"{where}: {len(ours)} publications in C++, {len(theirs)} in Python"]
    for c, b in zip(ours, theirs, strict=True):
        if (c["offset"], tuple(c["tokens"])) != (b.offset, b.tokens) or not _near(c["publish_time"], b.publish_time):
            return [f"{where}: publication {c['offset']} differs: C++ {c['publish_time']} vs Python {b.publish_time}"]
    return []


# ------------------------------------------------------------------------------------------
# tests


@pytest.fixture(scope="module")
def generated() -> list[Case]:
    return generated_cases(N_CASES)


def test_runner_matches_python_replay_on_generated_cases(generated: list[Case], tmp_path: Path) -> None:
    by_case = run_batch(tmp_path, generated)
    assert set(by_case) == {c.case_id for c in generated}
    problems = [d for c in generated for d in differences(c, by_case[c.case_id])]
    assert not problems, f"{len(problems)} differences, first: " + "\n".join(problems[:10])
    # The cases reach every kind of round: each plain-step reason, recycling, outcomes, drains.
    rounds = [ln for lines in by_case.values() for ln in lines if ln["type"] == "round"]
    assert {r["k1_reason"] for r in rounds} >= {None, "target_only", "not_ready", "no_match", "exhausted",
                                               "output_cap", "drafter", "correction"}
    assert {r["outcome"] for r in rounds} == {"correction", "bonus", "eos", "cap"}
    assert any(-2 in r["provenance"] for r in rounds)  # ASP recycled tokens
    assert any(w["cleanup"] > 0 for lines in by_case.values() for w in lines if w["type"] == "window")


def test_generated_cases_cover_every_scheme_budget_and_situation(generated: list[Case]) -> None:
    schemes = {c.config.scheme for c in generated}
    # The runner implements every scheme the catalog has except the host-only ones, which the
    # protocol refuses by name (tests/phone_runner/test_protocol.py checks the refusal).
    assert schemes == set(SCHEMES) == set(CATALOG) - set(HOST_ONLY_SCHEMES)
    budgets = {c.config.settings.get("budget", c.config.settings.get("cap")) for c in generated
               if c.config.scheme in ("as2d", "as2d_wo_td", "as2d_wo_bc", "asp", "as2d_online")}
    assert set(range(1, 25)) <= budgets
    assert {c.window.dataset for c in generated} == set(KINDS)
    assert any(len(c.window.reference) == 1 for c in generated)  # prefill already ends the output
    assert any(c.window.eos_id is None for c in generated)
    assert any(not c.window.sources["qwen"].tokens for c in generated)
    assert any(c.window.sources["qwen"].op_ms is not None for c in generated)
    assert {c.profile.name for c in generated} == set(_profiles())
    assert {c.drain for c in generated} == {"boundary", "full"}


# ------------------------------------------------------------------------------------------
# pinned cases: each once differed between the two sides (or between versions of the Python
# side the runner had to follow). Hand-built so the situation is certain, not sampled.


def _num(v: float) -> dict[str, Any]:
    return {"v": v, "source": "pinned conformance case"}


def _tiny_profile(per_width_ms: float = 5.0) -> DeviceProfile:
    """K1 = 15 ms (+``per_width_ms`` per width), producer 5 ms per forward, no per-round overheads."""
    raw = {"schema": "device-profile/1", "name": f"pinned-{per_width_ms}", "device": "test", "rules": {},
           "target_step_ms": _num(15.0), "loop_residual_ms": _num(0.0), "queue_ms": _num(0.0),
           "alignment_ms": _num(0.0),
           "verifier": {"idle_ms": {k: _num(15.0 + per_width_ms * (k - 1)) for k in range(1, 26)},
                        "concurrent": {"factor": _num(1.0), "missing": "error"}},
           "sources": {"qwen": {"kind": "autoregressive", "forward_ms": _num(5.0), "publication_ms": _num(0.0),
                                "startup_ms": _num(0.0), "concurrent_factor": _num(1.0), "batch_tokens": _num(8),
                                "confidence": True},
                       "parakeet": {"kind": "chunk", "chunk_service_ms": _num(7.0), "publication_ms": _num(0.0),
                                    "startup_ms": _num(0.0), "concurrent_factor": _num(1.0), "confidence": False}},
           "serial_drafter": "qwen",
           "asp": {"paired_branch_ms": _num(8.0), "prob_row_ms": _num(0.5),
                   "kv_refresh_ms": {k: _num(4.0 + k) for k in range(1, 26)}}}
    return parse_profile(raw, "pinned.yaml")


def _window(wid: str, ref: list[int], qwen: list[int], drafts: list[list[int]], confs: list[list[float]],
            parakeet: list[int] | None = None, eos: int | None = 0) -> Window:
    width = max((len(r) for r in drafts), default=0)
    arr = np.full((len(drafts), width), -1, dtype=np.int64)
    carr = np.zeros((len(drafts), width))
    for i, (r, c) in enumerate(zip(drafts, confs, strict=True)):
        arr[i, : len(r)] = r
        carr[i, : len(c)] = c
    sources = {"qwen": SourceTrack("qwen", tuple(qwen), tuple(0.9 for _ in qwen), (1,) * len(qwen))}
    if parakeet is not None:
        sources["parakeet"] = SourceTrack("parakeet", tuple(parakeet), None, (len(parakeet),) if parakeet else ())
    return Window(wid, "pinned", tuple(ref), eos, 1000, len(ref), DraftTable(arr, carr, np.array(
        [len(r) for r in drafts], dtype=np.int64)), sources, synthetic=True).validate("<pinned>")


def pinned_cases() -> list[Case]:
    prof = _tiny_profile()
    ref = [5, 6, 7, 8, 9, 10, 11, 0]
    hi = [0.9] * 24
    # ASP: draft [6, 7, 50, 60] after [5] is rejected at 50 (correction 8); the paired-branch
    # token after 8 is 60 = the old draft's LAST token: nothing to reuse, so it drafts fresh.
    asp_last = _window("pin-asp-last-token", ref, [], [[6, 7, 50, 60], [7], [8, 9, 10, 11, 0], [9, 10, 11, 0],
                                                       [10, 11, 0], [11, 0], [0]], [[0.9] * 4, [0.9], hi[:5],
                                                                                    hi[:4], hi[:3], hi[:2], hi[:1]])
    # Drain at an exact boundary (drain, D.3): 4 plain steps of 15 ms, a producer that
    # never matches at 5 ms per forward; EOS at 60 ms is the end of its 12th forward: 60, not 65.
    drain = _window("pin-drain-boundary", [1, 2, 3, 4, 0], [999] * 40, [[9]] * 4, [[0.9]] * 4)
    # A source without confidences under As²d's threshold: missing confidences never stop it.
    noconf = _window("pin-as2d-no-confidence", ref, [], [[0]] * 7, [[0.9]] * 7, parakeet=ref[1:])
    # Prefill already ends the output: zero rounds, one committed token.
    one = _window("pin-one-token", [0], [0], [], [])
    gate = {"threshold": 0.4} if "threshold" in AS2D_SETTINGS else {}
    return [Case("pin-asp-last-token", asp_last, ReplayConfig("asp", cap=4), prof, "boundary"),
            Case("pin-drain-boundary", drain, ReplayConfig("as2d", source="qwen", budget=3), prof, "boundary"),
            Case("pin-as2d-no-confidence", noconf, ReplayConfig("as2d", source="parakeet", budget=7, **gate), prof,
                 "boundary"),
            Case("pin-one-token-as2d", one, ReplayConfig("as2d", source="qwen"), prof, "boundary"),
            Case("pin-one-token-sd", one, ReplayConfig("sd"), prof, "boundary")]


def test_pinned_cases_match(tmp_path: Path) -> None:
    cases = pinned_cases()
    by_case = run_batch(tmp_path, cases)
    problems = [d for c in cases for d in differences(c, by_case[c.case_id])]
    assert not problems, "\n".join(problems)
    rounds = {c.case_id: [ln for ln in by_case[c.case_id] if ln["type"] == "round"] for c in cases}
    second = rounds["pin-asp-last-token"][1]  # the round after the rejection drafted fresh
    assert second["work_paired_forwards"] == 1 and second["work_forwards"] >= 1 and second["work_refresh_width"] == 0
    assert -2 not in second["provenance"]
    window = {c.case_id: next(ln for ln in by_case[c.case_id] if ln["type"] == "window") for c in cases}
    assert window["pin-drain-boundary"]["time"] == pytest.approx(0.060, abs=1e-12)
    assert max(len(r["chain"]) for r in rounds["pin-as2d-no-confidence"]) >= 2
    assert window["pin-one-token-as2d"]["tokens"] == 1 and not rounds["pin-one-token-sd"]
