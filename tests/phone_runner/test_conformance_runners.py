"""The two runners price in the request's own unit: with prices that a trip through milliseconds
changes, the Python runner and the C++ runner still print the same doubles (PROTOCOL.md,
``pricing``). Compared exactly, not to a tolerance (``two_runners``)."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from . import two_runners
from .test_conformance import generated_cases, pinned_cases, request

N_CASES = 1200


def changed_by_ms(x: float) -> bool:
    """Whether ``x`` seconds comes back different from a conversion to ms and back."""
    return x * 1000.0 / 1000.0 != x


def awkward(x: float) -> float:
    """The nearest price at or above ``x`` (within 1000 ulps) that a conversion to ms and back
    changes; ``x`` itself where there is none (zero, or a value >= 1 s, where the trip is exact)."""
    y = x
    for _ in range(1000 if x > 0 else 0):
        if changed_by_ms(y):
            return y
        y = math.nextafter(y, math.inf)
    return x


def awkward_pricing(p: dict[str, Any]) -> dict[str, Any]:
    """``p`` with every nonzero seconds value moved to an awkward neighbour (factors untouched)."""
    q = copy.deepcopy(p)
    for key in ("step_s", "loop_s", "queue_s", "align_s"):
        q[key] = awkward(q[key])
    for table in ("verify_idle_s", "verify_concurrent_s"):
        q[table] = {k: awkward(v) for k, v in q[table].items()}
    for s in q["sources"].values():
        for key in ("op_s", "publication_s", "startup_s"):
            s[key] = awkward(s[key])
    if q.get("asp"):
        a = q["asp"]
        a["paired_branch_s"], a["prob_row_s"] = awkward(a["paired_branch_s"]), awkward(a["prob_row_s"])
        a["kv_refresh_s"] = {k: awkward(v) for k, v in a["kv_refresh_s"].items()}
    return q


def test_prices_a_ms_round_trip_would_change_give_identical_lines_in_both_runners(tmp_path: Path) -> None:
    reqs = []
    for case in pinned_cases() + generated_cases(N_CASES):
        req = request(case)
        req["pricing"] = awkward_pricing(req["pricing"])
        reqs.append(req)
    # every request prices its plain step and most widths at values the old trip through ms changed
    assert all(changed_by_ms(r["pricing"]["verify_idle_s"]["1"]) for r in reqs)
    widths = [x for r in reqs for x in r["pricing"]["verify_idle_s"].values()]
    assert sum(map(changed_by_ms, widths)) > 0.9 * len(widths)
    problems, cpp = two_runners.compare(tmp_path, reqs)
    assert not problems, f"{len(problems)} differences, first: " + "\n".join(problems[:10])
    kinds = {x["type"] for lines in cpp for x in lines}
    assert {"round", "stage", "publication", "window"} <= kinds
