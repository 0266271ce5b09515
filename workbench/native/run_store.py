"""Native D.3 runs kept as JSON, so a change to replay's cost model can be re-priced on the very runs it
must predict (``python -m workbench.native.reprice``), without measuring them again.

A run store holds, per window, what the D.3 rule reads (``agreement.window_agreement``): every
target-only and As²d run's output and decode time, every As²d run's producer publication times and
operations (how fast its producer ran), the median-latency As²d run in full (its round records, stage
intervals, the producer's published tokens and drafter forwards), the drift probes taken before each
repetition (their ratios and their runs' calls and publications), and the unplanned target's reference
output.
Beside them: the replay inputs of the setup (``ReplayInputs``) and the frozen profile's YAML text, so a
store re-prices on its own. Other methods' runs and the slower As²d runs' rounds are not kept: D.3
replays only the median run. JSON, never pickle: a store crosses the run boundary.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from workbench.decoding import RoundRecord
from workbench.decoding.records import DraftWork
from workbench.errors import DataError
from workbench.io import atomic_write_json

from .driver import NativeResult
from .episodes import Episodes, HostSetup, median_run

FORMAT = 1
KEPT_SCHEMES = ("target_only", "as2d")  # the two D.3 compares


@dataclass(frozen=True, slots=True)
class ReplayInputs:
    """What replay needs of a host setup to re-price a native As²d run: the producer's source name in the
    host profile, As²d's settings as the native run used them, and the pair's EOS id, vocabulary and
    output cap."""

    source: str
    settings: Mapping[str, Any]
    eos_id: int | None
    vocab_size: int
    max_output: int

    @classmethod
    def of(cls, setup: HostSetup) -> ReplayInputs:
        return cls(setup.source, setup.params("as2d"), setup.pair.eos_id, setup.pair.vocab_size, setup.max_output)


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else x


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def run_to_json(run: NativeResult, full: bool) -> dict[str, Any]:
    """One native run as JSON. ``full=False`` keeps what D.3 reads of a run it does not replay: its
    output and times, and the producer's publication times and operations, which say how fast the
    producer ran in that run (``episodes.producer_token_ms``) beside the drift probes taken around it."""
    out: dict[str, Any] = {"window_id": run.window_id, "scheme": run.scheme, "output": list(run.output),
                           "time": run.time, "t_eos": run.t_eos, "cleanup": run.cleanup, "capped": run.capped}
    if not full:
        if run.producer_times:
            out.update(producer_times=list(run.producer_times), producer_ops=list(run.producer_ops))
        return out
    records = []
    for rec in run.records:
        row = asdict(rec)
        row.update({k: _finite(row[k]) for k in ("t_decide", "t_start", "t_end")})
        records.append(row)
    return {**out, "records": records, "stages": [list(s) for s in run.stages],
            "producer_tokens": list(run.producer_tokens), "producer_times": list(run.producer_times),
            "producer_forwards": run.producer_forwards, "producer_ops": list(run.producer_ops),
            "placement": run.placement, "fault": run.fault, "origin": _finite(run.origin),
            "joined_at_round": run.joined_at_round, "fell_back_at_round": run.fell_back_at_round,
            "producer_finish": _finite(run.producer_finish)}


def _record(row: Mapping[str, Any]) -> RoundRecord:
    known = {f.name for f in fields(RoundRecord)}
    r = {k: v for k, v in row.items() if k in known}
    for key in ("chain", "provenance", "committed"):
        r[key] = tuple(r[key])
    r["work"] = DraftWork(**r["work"])
    for key in ("t_decide", "t_start", "t_end"):
        r[key] = _nan(r.get(key))
    return RoundRecord(**r)


def run_from_json(d: Mapping[str, Any]) -> NativeResult:
    """The inverse of ``run_to_json`` (a slim run has no records, stages or producer stream)."""
    return NativeResult(
        window_id=d["window_id"], scheme=d["scheme"], output=tuple(d["output"]),
        records=tuple(_record(r) for r in d.get("records", ())),
        stages=tuple((str(a), str(b), float(s), float(e), int(i)) for a, b, s, e, i in d.get("stages", ())),
        time=float(d["time"]), t_eos=float(d["t_eos"]), cleanup=float(d.get("cleanup", 0.0)),
        capped=bool(d.get("capped", False)), producer_tokens=tuple(d.get("producer_tokens", ())),
        producer_times=tuple(d.get("producer_times", ())), producer_forwards=int(d.get("producer_forwards", 0)),
        producer_ops=tuple(d.get("producer_ops", ())), placement=dict(d.get("placement") or {}),
        fault=d.get("fault"), origin=_nan(d.get("origin")), joined_at_round=d.get("joined_at_round"),
        fell_back_at_round=d.get("fell_back_at_round"), producer_finish=_nan(d.get("producer_finish")))


def _probes(probes: Mapping[tuple[str, int], Any]) -> list[list[Any]]:
    return [[w, rep, v] for (w, rep), v in probes.items()]


def absorb(into: Episodes, ep: Episodes) -> Episodes:
    """``into`` with ``ep``'s runs, probes and references added (windows measured one at a time)."""
    into.results.extend(ep.results)
    into.placement = into.placement or ep.placement
    into.probes.update(ep.probes)
    into.as2d_probes.update(ep.as2d_probes)
    into.producer_probes.update(ep.producer_probes)
    into.width_probes.update(ep.width_probes)
    into.references.update(ep.references)
    into.probe_runs.update(ep.probe_runs)
    return into


def _probe_run(run: NativeResult) -> dict[str, Any]:
    """A drift probe's run: its calls and publications, without stage intervals (the store stays small)."""
    out = run_to_json(run, full=True)
    del out["stages"]
    return out


def store_json(ep: Episodes, inputs: ReplayInputs, profile_yaml: str | None) -> dict[str, Any]:
    """``ep``'s D.3 runs as one JSON document (module docstring): the median As²d run of each window in
    full, the rest slim."""
    runs: list[dict[str, Any]] = []
    for wid in dict.fromkeys(w for w, _, _, _ in ep.results):
        a2 = [(rep, r) for w, s, rep, r in ep.results if w == wid and s == "as2d"]
        full = a2[median_run([r for _, r in a2])][0] if a2 else None
        runs.extend({"rep": rep, **run_to_json(r, full=s == "as2d" and rep == full)}
                    for w, s, rep, r in ep.results if w == wid and s in KEPT_SCHEMES)
    return {"format": FORMAT, "inputs": {**asdict(inputs), "settings": dict(inputs.settings)},
            "profile_yaml": profile_yaml, "placement": ep.placement, "runs": runs,
            "probes": _probes(ep.probes), "as2d_probes": _probes(ep.as2d_probes),
            "producer_probes": _probes(ep.producer_probes),
            "width_probes": [[w, rep, {str(k): v for k, v in p.items()}] for (w, rep), p in ep.width_probes.items()],
            "references": {w: list(r) for w, r in ep.references.items()},
            "probe_runs": [[w, rep, [_probe_run(r) for r in runs]] for (w, rep), runs in ep.probe_runs.items()]}


def save_runs(path: str | Path, ep: Episodes, inputs: ReplayInputs, profile_file: str | None = None) -> Path:
    """Write ``ep``'s D.3 runs to ``path`` atomically, with the text of the profile file that priced them
    when it exists."""
    text = None
    if profile_file and Path(profile_file).is_file():
        text = Path(profile_file).read_text()
    return atomic_write_json(path, store_json(ep, inputs, text), allow_nan=False)


@dataclass(frozen=True)
class RunStore:
    """A loaded run store: the episodes D.3 reads, the setup's replay inputs, the profile's YAML text."""

    episodes: Episodes
    inputs: ReplayInputs
    profile_yaml: str | None


def load_runs(path: str | Path) -> RunStore:
    """Read a run store written by ``save_runs``; a file of another format is refused with its name."""
    fix = "point at a native_runs.json written by `python -m workbench.native.agreement` or the demo"
    try:
        raw = json.loads(Path(path).read_text())
    except (OSError, ValueError) as err:
        raise DataError(f"cannot read a native run store ({err})", str(path), fix) from err
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise DataError(f"not a native run store of format {FORMAT}", str(path), fix)
    ep = Episodes(placement=dict(raw.get("placement") or {}))
    ep.results = [(r["window_id"], r["scheme"], int(r["rep"]), run_from_json(r)) for r in raw["runs"]]
    ep.probes = {(w, int(rep)): float(v) for w, rep, v in raw["probes"]}
    ep.as2d_probes = {(w, int(rep)): float(v) for w, rep, v in raw["as2d_probes"]}
    ep.producer_probes = {(w, int(rep)): float(v) for w, rep, v in raw["producer_probes"]}
    ep.width_probes = {(w, int(rep)): {int(k): float(v) for k, v in p.items()} for w, rep, p in raw["width_probes"]}
    ep.references = {w: tuple(r) for w, r in raw["references"].items()}
    ep.probe_runs = {(w, int(rep)): tuple(run_from_json(r) for r in runs) for w, rep, runs in raw.get("probe_runs", ())}
    i = raw["inputs"]
    inputs = ReplayInputs(i["source"], dict(i["settings"]), i["eos_id"], int(i["vocab_size"]), int(i["max_output"]))
    return RunStore(ep, inputs, raw.get("profile_yaml"))


__all__ = ["FORMAT", "ReplayInputs", "RunStore", "absorb", "load_runs", "run_from_json", "run_to_json", "save_runs",
           "store_json"]
