"""Which fitted fields carry the D.3 difference between two host profiles (paper D.2, D.3)?

Two calibrations of one machine can price the same stored native runs differently (``reprice
--profile``). This swaps one group of fields at a time (``FIELD_GROUPS``) from the ``other`` profile into
the ``base`` one and re-prices the stores each time: a group whose swap moves the error most is the one
the two calibrations measured differently where replay is sensitive. Like ``reprice``, no model runs
and no clock is read.

``python -m workbench.native.profile_swap STORE [STORE ...] --base A.yaml --other B.yaml
[--markdown docs/results.md --section NAME]``. A store's own frozen profile stands for ``--base`` when
it is left out. The swapped profiles keep the base's anchors (agreement prices its anchors from the
profile itself, ``anchors.py``) and take the rules of both files.
"""

from __future__ import annotations

import argparse
import copy
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from workbench.errors import WorkbenchError
from workbench.replay.profile import parse_profile

from .agreement import agreement_frame
from .agreement_report import summarize
from .run_store import RunStore, load_runs

SECTION = "d3-profile-swap"
EACH_SOURCE = "*"  # a path step standing for every producer source both profiles price


@dataclass(frozen=True, slots=True)
class FieldGroup:
    """Profile fields swapped together: YAML paths (``EACH_SOURCE`` for every shared source)."""

    name: str
    paths: tuple[tuple[str, ...], ...]


FIELD_GROUPS = (
    FieldGroup("kernel plan", (("kernel_plan",),)),
    FieldGroup("target step, loop, queue, alignment",
               (("target_step_ms",), ("loop_residual_ms",), ("queue_ms",), ("alignment_ms",))),
    FieldGroup("idle widths", (("verifier", "idle_ms"),)),
    FieldGroup("widths beside the producer", (("verifier", "concurrent"),)),
    FieldGroup("idle context fit (slopes, cold call)",
               (("verifier", "context", "slope_ms"), ("verifier", "context", "cold_ms"),
                ("verifier", "context", "ref_tokens"), ("verifier", "context", "residual_ms"))),
    FieldGroup("context slopes beside the producer", (("verifier", "context", "concurrent_slope_ms"),)),
    FieldGroup("producer per forward (R_OPS)", (("sources", EACH_SOURCE, "forward_ms"),)),
    FieldGroup("producer coexistence (R_LIVE)", (("sources", EACH_SOURCE, "concurrent_factor"),)),
    FieldGroup("producer startup", (("sources", EACH_SOURCE, "startup_ms"),)),
    FieldGroup("producer growth (R_GROWTH)", (("sources", EACH_SOURCE, "growth"),)),
)


def _expand(path: tuple[str, ...], base: dict[str, Any], other: dict[str, Any]) -> list[tuple[str, ...]]:
    if EACH_SOURCE not in path:
        return [path]
    i = path.index(EACH_SOURCE)
    shared = sorted(set(base.get("sources", {})) & set(other.get("sources", {})))
    return [(*path[:i], s, *path[i + 1:]) for s in shared]


def _set(node: dict[str, Any], path: tuple[str, ...], src: dict[str, Any]) -> None:
    """``node[path] = src[path]``; absent in ``src``: removed from ``node``; a parent absent in ``node``: kept."""
    *up, last = path
    here: Any = node
    there: Any = src
    for key in up:
        here, there = here.get(key), there.get(key) if isinstance(there, dict) else None
        if not isinstance(here, dict):
            return
    if isinstance(there, dict) and last in there:
        here[last] = copy.deepcopy(there[last])
    else:
        here.pop(last, None)


def swapped(base: dict[str, Any], other: dict[str, Any], group: FieldGroup) -> dict[str, Any]:
    """``base`` with ``group``'s fields taken from ``other`` (rules of both, so every derivation resolves)."""
    out = copy.deepcopy(base)
    out["rules"] = {**other.get("rules", {}), **base.get("rules", {})}
    for path in group.paths:
        for p in _expand(path, base, other):
            _set(out, p, other)
    return out


def d3_errors(runs: RunStore, raw: dict[str, Any], name: str) -> dict[str, float]:
    """The stored runs' D.3 MAE, pooled and target-only errors (%) under the profile mapping ``raw``."""
    profile = parse_profile(raw, file=f"{name} profile")
    s = summarize(agreement_frame(runs.episodes, runs.inputs, profile), profile)
    return {"mae_pct": s["mae_pct"], "pooled_pct": s["pooled_error_pct"],
            "target_only_mae_pct": s["target_only_mae_pct"]}


def _row(store: str, runs: RunStore, variant: str, raw: dict[str, Any]) -> dict[str, Any]:
    return {"store": store, "profile": variant, **d3_errors(runs, raw, variant)}


def swap_table(stores: Sequence[str], other: dict[str, Any], base: dict[str, Any] | None = None,
               groups: Sequence[FieldGroup] = FIELD_GROUPS) -> pl.DataFrame:
    """Per store: the D.3 MAE, pooled and target-only errors under the base, each one-group swap and ``other``."""
    rows = []
    for store in stores:
        runs = load_runs(store)  # once per store: every variant re-prices the same runs
        b = base if base is not None else _stored(store, runs)
        rows.append(_row(store, runs, "base", b))
        rows += [_row(store, runs, f"base + other's {g.name}", swapped(b, other, g)) for g in groups]
        rows.append(_row(store, runs, "other", other))
    return pl.DataFrame(rows)


def _stored(store: str, runs: RunStore) -> dict[str, Any]:
    text = runs.profile_yaml
    if text is None:
        raise WorkbenchError("the run store keeps no profile", store, "pass --base with the profile it was priced by")
    return yaml.safe_load(text)


def read_profile(path: str | Path) -> dict[str, Any]:
    """A host profile's mapping, or one line naming the file and the fix."""
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as err:
        raise WorkbenchError(f"cannot read a host profile ({err})", str(path),
                             "pass a host.yaml written by calibration") from err
    if not isinstance(raw, dict) or not isinstance(raw.get("sources"), dict):
        raise WorkbenchError("not a host profile (no sources)", str(path), "pass a host.yaml written by calibration")
    return raw


def markdown(table: pl.DataFrame, base: str, other: str, command: str, split: str | None = None) -> str:
    """The swaps as a docs/results.md section body: machine, command, profiles, date."""
    from .agreement_report import provenance
    from .bench_report import machine_facts

    m, p = machine_facts(), provenance(command)
    head = ["**D.3 under one profile with one group of another's fields**", "",
            f"- machine: this re-pricing ran on {m['cpu']}, {m['cores']} cores (no model runs); the stores were "
            "measured on the machines their own agreement lines name",
            f"- command: `{p['command']}`", f"- base profile: {base}; other profile: `{other}`",
            f"- split: {split or 'as each store was measured'}",
            f"- date of this re-pricing: {p['date'][:10]}", "",
            "| store | profile | As²d MAE % | pooled % | target-only MAE % |", "|---|---|---|---|---|"]
    rows = [f"| `{r['store']}` | {r['profile']} | {r['mae_pct']:.2f} | {r['pooled_pct']:+.2f} | "
            f"{r['target_only_mae_pct']:.2f} |" for r in table.iter_rows(named=True)]
    return "\n".join(head + rows) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Swap one group of host-profile fields at a time and re-price D.3.")
    ap.add_argument("stores", nargs="+", help="native_runs.json files (agreement --out-dir, or a demo run's output)")
    ap.add_argument("--other", required=True, help="the profile whose fields are swapped in")
    ap.add_argument("--base", default=None, help="the profile swapped into (default: each store's own)")
    ap.add_argument("--markdown", default=None, help="also write the table as a section of this file")
    ap.add_argument("--section", default=SECTION, help="the section's name")
    ap.add_argument("--split", default=None, help="the stores' split, as the section names it (e.g. 'bench dev')")
    args = ap.parse_args(argv)
    command = "python -m workbench.native.profile_swap " + shlex.join(argv or sys.argv[1:])
    try:
        table = swap_table(args.stores, read_profile(args.other), read_profile(args.base) if args.base else None)
    except WorkbenchError as err:
        sys.exit(err.headline())
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=2, fmt_str_lengths=80):
        print(table)
    if args.markdown:
        from workbench.io import write_section

        body = markdown(table, f"`{args.base}`" if args.base else "each store's own", args.other, command,
                        args.split)
        print(f"results table -> {write_section(args.markdown, args.section, body)}")


if __name__ == "__main__":
    main()
