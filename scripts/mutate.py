"""Apply the mutation audit's ten mutants one at a time to a scratch copy and run the tests that guard them.

    .venv/bin/python scripts/mutate.py            # all ten; prints "killed N/10", exit 0 only if N == 10
    .venv/bin/python scripts/mutate.py --list     # the mutants and their tests
    .venv/bin/python scripts/mutate.py -k drain   # only mutants whose name contains "drain"

The scratch copy is ``git archive HEAD`` (committed code only, so a run is reproducible and never
touches the working tree) unless ``--worktree`` copies the working tree as it is. Each mutant is
(file, old snippet, new snippet) on the current code: a snippet that is not found exactly once is
reported loudly and counts as a failure, never as a kill. The guarding tests are first run on the
unmutated copy; a mutant is killed only if those same tests then fail (pytest exit code 1).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


# The run's handlers (tracked_run), not the sweep parent's, which install the same pair of signals.
_RUN_SIGNALS = ("\n                self._old[sig] = signal.signal(sig, self._handler)\n"
                "        except ValueError:  # not the main thread (e.g. a launcher")

MUTANTS = (
    Mutant("rejection at the last chain slot labelled bonus", "workbench/decoding/verification.py",
           '"bonus" if accepted == len(chain) else "correction"',
           '"bonus" if accepted >= len(chain) - 1 else "correction"',
           ("tests/test_mutants_core.py",)),
    # bisect_right past the boundary: an EOS that lands on an operation's end pays for the next one.
    Mutant("drain with bisect_right", "workbench/replay/producer.py",
           "ends[bisect.bisect_left(ends, self.work - BOUNDARY_S)]",
           "ends[bisect.bisect_right(ends, self.work + BOUNDARY_S)]",
           ("tests/replay/test_drain_and_audits.py",)),
    # clock.t is the verifier's time after the last round's queue work; t_eos is before it.
    Mutant("drain added after queue work instead of before", "workbench/replay/engine.py",
           "producer.drain(t_eos,", "producer.drain(clock.t,",
           ("tests/replay/test_drain_and_audits.py",)),
    Mutant("tps_pooled(by=...) with groups reordered", "workbench/metrics.py",
           'windows.group_by(list(by), maintain_order=True).agg(expr)',
           'windows.group_by(list(by), maintain_order=True).agg(expr).sort(list(by))',
           ("tests/test_mutants_core.py", "tests/test_metrics.py")),
    Mutant("the ordering audit removed", "workbench/replay/audit.py",
           "if not (prev_end <= t_decide <= t_start <= t_end):", "if False:",
           ("tests/replay/test_drain_and_audits.py", "tests/replay/test_audits.py")),
    Mutant("the charged-time audit removed", "workbench/replay/audit.py",
           "if result.time < prev_end or result.t_eos > result.time:", "if False:",
           ("tests/replay/test_drain_and_audits.py", "tests/replay/test_audits.py")),
    Mutant("infinite samples accepted", "workbench/data/audio.py",
           "np.isfinite(a).all()", "(~np.isnan(a)).all()",
           ("tests/test_audio_validation.py", "tests/models/test_audio.py")),
    Mutant("the dtype check removed", "workbench/data/audio.py",
           "if not np.issubdtype(a.dtype, np.number):", "if False:",
           ("tests/test_audio_validation.py", "tests/models/test_audio.py")),
    Mutant("a sweep parent always FINISHED even when a child failed", "workbench/tracking/sweep.py",
           'client.set_terminated(parent, "FAILED" if failed or not children else "FINISHED")',
           'client.set_terminated(parent, "FINISHED")',
           ("tests/test_run_lifecycle.py::test_a_sweep_parent_fails_when_a_child_failed",)),
    Mutant("SIGTERM not marking the run FAILED", "workbench/tracking/lifecycle.py",
           "for sig in (signal.SIGTERM, signal.SIGINT):" + _RUN_SIGNALS,
           "for sig in (signal.SIGINT,):" + _RUN_SIGNALS,
           ("tests/test_run_lifecycle.py::test_sigterm_ends_the_run_failed",)),
)


def scratch_copy(dest: Path, worktree: bool) -> None:
    if worktree:
        skip = shutil.ignore_patterns(".git", ".venv", ".cache", "mlruns", "outputs", "multirun", "__pycache__",
                                      "*.egg-info", "build", "node_modules")
        shutil.copytree(ROOT, dest, ignore=skip, symlinks=True, dirs_exist_ok=True)
        return
    archive = dest.parent / "head.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), "HEAD"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    archive.unlink()


def pytest(copy: Path, tests: tuple[str, ...], timeout: float) -> tuple[int, float, str]:
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    env.setdefault("AS2D_CACHE", str(ROOT / ".cache" / "as2d"))
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    t = time.monotonic()
    try:
        res = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, time.monotonic() - t, "timed out"
    tail = (res.stdout + res.stderr).strip().splitlines()
    return res.returncode, time.monotonic() - t, tail[-1] if tail else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the mutants and their tests, run nothing")
    ap.add_argument("-k", default="", help="only mutants whose name contains this text")
    ap.add_argument("--worktree", action="store_true", help="mutate a copy of the working tree, not of HEAD")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per pytest run (a loaded machine is slow)")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if args.k.lower() in m.name.lower()]
    if args.list:
        for m in chosen:
            print(f"- {m.name}\n    {m.file}: {m.old!r} -> {m.new!r}\n    tests: {' '.join(m.tests)}")
        return 0
    with tempfile.TemporaryDirectory(prefix="as2d-mutate-") as tmp:
        copy = Path(tmp) / "tree"
        scratch_copy(copy, args.worktree)
        print(f"scratch copy of {'the working tree' if args.worktree else 'HEAD'}: {copy}", flush=True)
        baseline_ok: dict[tuple[str, ...], bool] = {}
        killed, problems = 0, []
        for i, m in enumerate(chosen, 1):
            head = f"[{i}/{len(chosen)}] {m.name}"
            path = copy / m.file
            text = path.read_text() if path.exists() else ""
            n = text.count(m.old)
            if n != 1:
                why = "file missing" if not path.exists() else f"snippet found {n} times (expected once)"
                print(f"{head}: NOT APPLIED -- {m.file}: {why}:\n    {m.old!r}\n    "
                      "the code changed: update this mutant in scripts/mutate.py", flush=True)
                problems.append(m.name)
                continue
            if m.tests not in baseline_ok:
                rc, secs, tail = pytest(copy, m.tests, args.timeout)
                baseline_ok[m.tests] = rc == 0
                if rc != 0:
                    print(f"    baseline of {' '.join(m.tests)} FAILS without any mutant (rc {rc}: {tail})",
                          flush=True)
            if not baseline_ok[m.tests]:
                print(f"{head}: NOT JUDGED -- its tests fail on the unmutated code", flush=True)
                problems.append(m.name)
                continue
            path.write_text(text.replace(m.old, m.new))
            try:
                rc, secs, tail = pytest(copy, m.tests, args.timeout)
            finally:
                path.write_text(text)
            if rc == 1:
                killed += 1
                print(f"{head}: killed ({secs:.0f} s; {tail})", flush=True)
            else:
                verdict = "SURVIVED" if rc == 0 else f"ERROR (pytest exit {rc}: {tail})"
                print(f"{head}: {verdict} ({secs:.0f} s)", flush=True)
                problems.append(m.name)
        print(f"killed {killed}/{len(chosen)}")
        if problems:
            print("not killed: " + "; ".join(problems))
        return 0 if killed == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
