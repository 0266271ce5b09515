"""The reference runner cross-built for aarch64 (Debian g++-aarch64-linux-gnu, static) and run under
qemu-aarch64 on a subset of the conformance cases: the same round records and times (1e-9) as the
Python replay. The build uses -ffp-contract=off, so ARM's fused multiply-add never changes a time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from phone_runner.runner import runner_binary

from .test_conformance import SCHEMES, differences, generated_cases, pinned_cases, run_batch

N_ARM_CASES = 150  # every scheme and profile; the x86-64 test covers the full 1,200
pytestmark = pytest.mark.skipif(not (shutil.which("aarch64-linux-gnu-g++") and shutil.which("qemu-aarch64")),
                                reason="needs g++-aarch64-linux-gnu and qemu-user (scripts/setup.sh)")


def test_aarch64_runner_under_qemu_matches_python_replay(tmp_path: Path) -> None:
    binary = runner_binary("aarch64")
    cases = generated_cases(N_ARM_CASES) + pinned_cases()
    by_case = run_batch(tmp_path, cases, ["qemu-aarch64", str(binary)])
    headers = [h for lines in by_case.values() for h in lines if h["type"] == "header"]
    assert {(h["runner"]["name"], h["device"]["abi"]) for h in headers} == {("as2d_runner", "arm64-v8a")}
    problems = [d for c in cases for d in differences(c, by_case[c.case_id])]
    assert not problems, f"{len(problems)} differences on aarch64, first: " + "\n".join(problems[:10])
    assert {c.config.scheme for c in cases} == set(SCHEMES)
