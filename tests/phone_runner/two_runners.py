"""The Python runner and the C++ runner on the same reference-engine requests, line for line.

PROTOCOL.md makes both runners answer a request with the same ``round``, ``stage``,
``publication`` and ``window`` lines. Times are compared exactly, not to a tolerance: both runners
add the request's own seconds in the same order, and the C++ build fuses no multiply-add
(``-ffp-contract=off``), so every double is the same double. Only the order of line kinds within a
window may differ (the Python runner interleaves publications with rounds), so lines are compared
per kind, in order.
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

from phone_runner.device import Out, run_reference
from phone_runner.protocol import parse_request, validate_line
from phone_runner.runner import runner_binary

COMPARED = ("round", "stage", "publication", "window")


def python_lines(req: dict[str, Any]) -> list[dict[str, Any]]:
    """The Python runner's lines for ``req``, its totals as a last ``summary`` line."""
    buf = io.StringIO()
    totals = run_reference(parse_request(json.loads(json.dumps(req))), Out(None, buf))
    lines = [validate_line(x, i, "phone_runner.device") for i, x in enumerate(buf.getvalue().splitlines(), 1)]
    return [*lines, {"type": "summary", "rounds": int(totals["rounds"]), "tokens": int(totals["tokens"]),
                     "time": float(totals["time"])}]


def cpp_lines(tmp: Path, reqs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The C++ runner's lines for each request (one process, ``--batch``): an answer starts at a header,
    or after a summary or error line (a malformed request is answered by its error line alone)."""
    path = tmp / "two_runners.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in reqs))
    done = subprocess.run([str(runner_binary()), "--batch", str(path)], capture_output=True, text=True, timeout=600)
    out: list[list[dict[str, Any]]] = []
    for i, text in enumerate(done.stdout.splitlines(), 1):
        obj = validate_line(text, i, "as2d_runner --batch")
        if obj["type"] == "header" or not out or out[-1][-1]["type"] in ("summary", "error"):
            out.append([])
        out[-1].append(obj)
    assert len(out) == len(reqs), done.stdout[-2000:] + done.stderr[-2000:]
    return out


def differences(run_id: str, py: list[dict[str, Any]], cpp: list[dict[str, Any]]) -> list[str]:
    """Every way the two runners' lines differ, exact equality throughout (times included)."""
    if cpp[-1]["type"] != "summary":
        return [f"{run_id}: the C++ runner ended with {cpp[-1]}"]
    out: list[str] = []
    for kind in COMPARED:
        p = [x for x in py if x["type"] == kind]
        c = [x for x in cpp if x["type"] == kind]
        if len(p) != len(c):
            out.append(f"{run_id}: {len(p)} {kind} lines from Python, {len(c)} from C++")
        for i, (a, b) in enumerate(zip(p, c, strict=False)):
            fields = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
            if fields:
                out.append(f"{run_id}: {kind} line {i}: " + ", ".join(
                    f"{k}: Python {a.get(k)!r} != C++ {b.get(k)!r}" for k in fields))
                break
    ps, cs = py[-1], cpp[-1]
    for key in ("rounds", "tokens", "time"):
        if ps[key] != cs[key]:
            out.append(f"{run_id}: summary {key}: Python {ps[key]!r} != C++ {cs[key]!r}")
    return out


def compare(tmp: Path, reqs: list[dict[str, Any]]) -> tuple[list[str], list[list[dict[str, Any]]]]:
    """All differences between the runners on ``reqs``, and the C++ runner's lines per request."""
    cpp = cpp_lines(tmp, reqs)
    problems = [d for req, c in zip(reqs, cpp, strict=True) for d in differences(req["run_id"], python_lines(req), c)]
    return problems, cpp
