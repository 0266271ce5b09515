"""calibrate_phone with the Python runner's torch engine on the loopback phone against this host's own
width sweep, side by side: is each fitted verify width within 10 % of the host's?

The loopback phone's forwards are this host's forwards, so the two should agree; a shared machine drifts
by more than 10 % within minutes, so the two are interleaved A B A B A (A: the host's D.2 width sweep in
this process, B: a ``calibrate_phone`` job over a private adb server) and each phone value is compared
with the median of all host sweeps, beside the host sweeps' own spread. A width passes when every B is
within the band. Exit status 1 when one does not. Never asserted in a test.

    PYTHONPATH=. python benchmarks/phone_calibration_check.py [--widths 1,4,8] [--reps 5] [--rounds 2] \\
        [--markdown docs/results.md]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BAND = 0.10  # the claim: a measured width within 10 % of the host's
SECTION = "phone-calibration-check"
CONF = Path(__file__).resolve().parents[1] / "conf"


@dataclass(frozen=True)
class Row:
    """One width: the host sweeps' median and spread beside each phone calibration's value."""

    width: int
    host_ms: float  # median over the host sweeps' per-sweep medians
    host_spread: float  # max / min of those per-sweep medians: the machine's own drift
    phone_ms: tuple[float, ...]  # one per calibrate_phone job
    band: float = BAND

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(p / self.host_ms for p in self.phone_ms)

    @property
    def passed(self) -> bool:
        return all(abs(r - 1) <= self.band for r in self.ratios)


def compare(host: list[dict[int, float]], phone: list[dict[int, float]], band: float = BAND) -> list[Row]:
    """The rows of the check: per width of the first host sweep, host median and spread, phone values."""
    return [Row(k, statistics.median(h[k] for h in host), max(h[k] for h in host) / min(h[k] for h in host),
                tuple(p[k] for p in phone), band) for k in host[0]]


def table(rows: list[Row]) -> list[str]:
    """The rows as a markdown table (printed and, with ``--markdown``, written)."""
    n = max(len(r.phone_ms) for r in rows)
    head = (["K", "host ms (median)", "host spread (max/min)"] + [f"phone ms #{i + 1}" for i in range(n)]
            + [f"phone/host #{i + 1}" for i in range(n)] + [f"within {rows[0].band:.0%}"])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = ([str(r.width), f"{r.host_ms:.2f}", f"{r.host_spread:.3f}"] + [f"{p:.2f}" for p in r.phone_ms]
                 + [f"{x:.3f}" for x in r.ratios] + ["PASS" if r.passed else "FAIL"])
        out.append("| " + " | ".join(cells) + " |")
    return out


def compose_job(tmp: Path, widths: list[int], reps: int, *over: str) -> Any:
    """The calibrate_phone job of the slow torch-calibration test, tracked into a private sqlite store."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=[
            "experiment=calibrate_phone", f"tracking.uri=sqlite:///{tmp}/mlflow.db", f"out_dir={tmp}/out",
            f"phone.state_dir={tmp}/state", "phone.conditions.rest_s=0", "device=k70_pro", "dataset=synthetic",
            "dataset.n_windows=3", "dataset.mean_tokens=40", "phone.engine.kind=torch", "phone.name=loopback_torch",
            f"phone.profile_dir={tmp}/profiles", f"phone.calibrate.reps={reps}",
            f"phone.calibrate.widths=[{','.join(map(str, widths))}]", "phone.calibrate.offsets=[0]",
            "phone.calibrate.with_producer=[false]", "phone.calibrate.producer_forward=false",
            "phone.max_seconds=6", "phone.idle_timeout_s=900", *over])


def host_sweep(model: dict[str, Any], widths: list[int], reps: int) -> dict[int, float]:
    """The host's D.2 verify sweep on the test's window and placement: median ms per width."""
    from workbench.native.calibrate import idle_width_medians
    from workbench.native.windows import demo_windows

    return idle_width_medians(model, widths, reps, demo_windows(6.0, model=model)[0][0])


def phone_calibration(tmp: Path, widths: list[int], reps: int, serial: str) -> dict[int, float]:
    """One calibrate_phone job on the loopback phone: the written profile's verify ms per width."""
    from workbench.replay.profile import load_profile
    from workbench.run import execute

    execute(compose_job(tmp, widths, reps, f"phone.serial={serial}"))
    profile = load_profile(tmp / "profiles/loopback_torch.yaml")
    return {k: profile.verify_ms(k) for k in widths}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--widths", default="1,4,8", help="verify widths K, comma-separated")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per width, host and phone alike")
    ap.add_argument("--rounds", type=int, default=2, help="calibrate_phone jobs (B), each between two host sweeps")
    ap.add_argument("--markdown", default=None, help=f"write section {SECTION!r} of this document")
    args = ap.parse_args(argv)
    widths = [int(w) for w in args.widths.split(",")]
    command = " ".join(["python benchmarks/phone_calibration_check.py", *(sys.argv[1:] if argv is None else argv)])

    import torch
    from omegaconf import OmegaConf

    from phone_runner.testing.loopback import adb_server, start_loopback
    from workbench.native.agreement import provenance

    # SIGTERM unwinds like Ctrl-C, through the finally blocks that unplug the phone and kill the server
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    start = provenance(command)
    host: list[dict[int, float]] = []
    phone: list[dict[int, float]] = []
    with tempfile.TemporaryDirectory(prefix="as2d-calcheck-") as tmp_dir, adb_server() as port:
        tmp = Path(tmp_dir)
        model = OmegaConf.to_container(compose_job(tmp, widths, args.reps).model, resolve=True)
        dev = start_loopback(tmp / "phone", port)
        try:
            for i in range(2 * args.rounds + 1):
                if i % 2 == 0:
                    host.append(host_sweep(model, widths, args.reps))
                    print(f"A{i // 2 + 1} host  ms: {_fmt(host[-1])}", flush=True)
                else:
                    phone.append(phone_calibration(tmp / f"b{i // 2 + 1}", widths, args.reps, dev.serial))
                    print(f"B{i // 2 + 1} phone ms: {_fmt(phone[-1])}", flush=True)
        finally:
            dev.stop()
            dev.disconnect(port)
    end = provenance(command)
    rows = compare(host, phone)
    facts = [f"- machine: {end['machine']}; torch {torch.__version__}; load average (1/5/15 min) "
             f"{start['load']} at start, {end['load']} at end",
             f"- command: `{command}`",
             "- split: the first window of `demo_windows(6.0)`, decoder offset 0, verifier on one thread",
             f"- run date: {end['date'][:10]}",
             f"- order: A B A B A ... ({len(host)} host sweeps, {len(phone)} calibrations, {args.reps} reps each)"]
    lines = facts + [""] + table(rows)
    print("\n".join(lines))
    if args.markdown:
        from workbench.io import write_section

        title = "**calibrate_phone (torch engine, loopback phone) against the host width sweep**"
        write_section(args.markdown, SECTION, "\n".join([title, "", *lines]))
    return 0 if all(r.passed for r in rows) else 1


def _fmt(ms: dict[int, float]) -> str:
    return "  ".join(f"K{k} {v:.2f}" for k, v in ms.items())


if __name__ == "__main__":
    raise SystemExit(main())
