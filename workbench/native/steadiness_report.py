"""Read host profiles' calibration steadiness (``steadiness.py``, paper D.2, D.3) with no model running.

``python -m workbench.native.steadiness_report A.yaml [B.yaml ...] [--markdown docs/results.md --section NAME]``:
each profile's recorded ``calibration:`` verdict where it has one, and the width inversions of its idle
prices under its kernel plan, which profiles calibrated before the checkpoints existed can be checked for.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .steadiness import ORDER_TOLERANCE, assess

SECTION = "calibration-steadiness"


def profile_rows(paths: Sequence[str]) -> list[dict[str, Any]]:
    """Per profile: its recorded verdict (if any) and the inversions of its idle prices."""
    from workbench.replay.profile import load_profile

    rows = []
    for path in paths:
        prof = load_profile(path)
        idle = {k: prof.verify_ms(k) for k in prof.verifier.widths()}
        found = assess((), idle, planned=prof.kernel_plan is not None).inversions
        worst = max(found, key=lambda i: i.ratio) if found else None
        check = prof.calibration
        rows.append({"profile": path, "recorded": ("not checked" if check is None else
                                                    f"{'steady' if check.steady else 'unsteady'}, x{check.spread:.2f}"),
                     "inversions": len(found) if prof.kernel_plan is not None else "not judged (no kernel plan)",
                     "worst": "" if worst is None else (f"K{worst.narrow} {worst.narrow_ms:.1f} ms above "
                                                        f"K{worst.wide} {worst.wide_ms:.1f} ms")})
    return rows


def _markdown(rows: Sequence[Mapping[str, Any]], command: str) -> str:
    from .agreement_report import provenance
    from .bench_report import machine_facts

    m, p = machine_facts(), provenance(command)
    head = ["**Calibration steadiness of host profiles** (width inversions of the idle prices, "
            f"tolerance {ORDER_TOLERANCE:.0%})", "",
            f"- machine: read on {m['cpu']}, {m['cores']} cores (no model runs); each profile names the machine "
            "that calibrated it", f"- command: `{p['command']}`",
            "- split: each profile's calibration windows (dev only)", f"- date: {p['date'][:10]}", "",
            "| profile | recorded verdict | inversions | worst |", "|---|---|---|---|"]
    return "\n".join(head + [f"| `{r['profile']}` | {r['recorded']} | {r['inversions']} | {r['worst']} |"
                             for r in rows]) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Was each host profile's calibration steady? (no model runs)")
    ap.add_argument("profiles", nargs="+", help="host profiles (host.yaml) written by calibration")
    ap.add_argument("--markdown", default=None, help="also write the table as a section of this file")
    ap.add_argument("--section", default=SECTION, help="the section's name")
    args = ap.parse_args(argv)
    from workbench.errors import WorkbenchError

    try:
        rows = profile_rows(args.profiles)
    except (WorkbenchError, OSError) as err:
        sys.exit(err.line() if isinstance(err, WorkbenchError) else f"cannot read a host profile: {err}")
    for r in rows:
        inv = r["inversions"]
        order = f"{inv} width inversion(s) {r['worst']}".rstrip() if isinstance(inv, int) else f"width order {inv}"
        print(f"{r['profile']}: {r['recorded']}; {order}")
    if args.markdown:
        from workbench.io import write_section

        body = _markdown(rows, "python -m workbench.native.steadiness_report " + shlex.join(argv or sys.argv[1:]))
        print(f"results table -> {write_section(args.markdown, args.section, body)}")


__all__ = ["SECTION", "main", "profile_rows"]


if __name__ == "__main__":
    main()
