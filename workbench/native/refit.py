"""Fit a stored host calibration again from its raw samples, under the fit rules as they are now (D.2).

``python -m workbench.native.refit HOST.yaml ... --out-dir D`` reads the raw samples and round records a
calibration kept beside its profile (``host_samples.parquet`` and ``host_rounds.parquet``: in the
calibration's out-dir, or in ``HOST.yaml.samples/`` for a profile in the cache) and fits every fitted
field again (``fit.fitted_parts``). No model runs and no clock is read: the measurements stay those of
the calibration's day, only how they are turned into prices changes. The header (machine, device,
description), the steadiness verdict (``calibration:``, judged on the checkpoints when they were timed)
and the calibration's date in every ``source`` are kept; the rules are today's. It prints each field
whose value the rules moved, and writes ``D/<name>.yaml``.

``--stores S ...`` prices stored native runs (``native_runs.json``) under each stored profile and its
refit (``--markdown F`` writes the table as a section): a change to a fit rule is judged on stored runs
before any new measurement, on every calibration that kept its samples. Judge a rule on dev stores only.
``--no-stage-speed`` fits the samples as timed, leaving out R_STAGE (``stage_speed.py``), to judge that rule.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from workbench.errors import WorkbenchError
from workbench.replay.profile import parse_profile

from .calibrate import write_profile
from .fit import RULES, fitted_parts
from .profile_swap import d3_errors, read_profile
from .run_store import load_runs

SAMPLES, ROUNDS = "host_samples.parquet", "host_rounds.parquet"
SECTION = "refit-dev"
DATE = re.compile(r"on host (\d{4}-\d{2}-\d{2})")
HEADER = ("schema", "name", "device", "machine", "description")  # kept as calibration wrote them


@dataclass(frozen=True, slots=True)
class StoredNames:
    """The pair's names as a stored profile records them (``fit.FitNames``)."""

    source: str
    serial_source: str | None
    batch_tokens: int


def sample_dir(profile_path: Path) -> Path:
    """Where the calibration kept its raw samples: ``<profile>.samples/`` (the cache) or the profile's
    folder (a calibration out-dir)."""
    for d in (profile_path.with_name(profile_path.name + ".samples"), profile_path.parent):
        if (d / SAMPLES).is_file() and (d / ROUNDS).is_file():
            return d
    raise WorkbenchError("no raw samples beside this profile", str(profile_path),
                         f"refit needs the {SAMPLES} and {ROUNDS} its calibration wrote (in its --out-dir, or "
                         "<profile>.samples/ in the cache); calibrate again: python -m workbench.native.calibrate")


def stored_names(profile: dict[str, Any]) -> StoredNames:
    """The producer (the source that publishes), the serial drafter and the batch size."""
    sources: dict[str, Any] = profile["sources"]
    serial = profile.get("serial_drafter")
    producer = next((n for n, s in sources.items() if s.get("publication_ms", {}).get("derived") != "R_SERIAL"),
                    next(iter(sources)))
    return StoredNames(producer, serial, int(sources[producer]["batch_tokens"]["v"]))


def calibration_date(profile: dict[str, Any]) -> str:
    """The day its samples were measured: as the target step's ``source`` names it (every calibration
    writes one), else the first ``on host <date>`` anywhere in the profile."""
    step = profile.get("target_step_ms")
    for text in ((step or {}).get("source", "") if isinstance(step, dict) else "", yaml.safe_dump(profile)):
        found = DATE.search(text)
        if found is not None:
            return found.group(1)
    raise WorkbenchError("no calibration date in this profile", "sources",
                         "refit reads a profile written by python -m workbench.native.calibrate")


def refit(profile_path: str | Path, old: dict[str, Any] | None = None, stage_speed: bool = True) -> dict[str, Any]:
    """The stored profile (``old``: its mapping, when already read) with every fitted field fitted again
    from its samples under today's rules (``stage_speed=False``: all but R_STAGE, the samples as timed);
    a field today's fit no longer writes is dropped."""
    path = Path(profile_path)
    old = old if old is not None else read_profile(path)
    d = sample_dir(path)
    raw = pl.read_parquet(d / SAMPLES)
    names = stored_names(old)
    has_conf = bool(old["sources"][names.source].get("confidence", False))
    parts = fitted_parts(raw, pl.read_parquet(d / ROUNDS), names, calibration_date(old), has_conf, stage_speed)
    header = {k: old[k] for k in HEADER if k in old}
    header["description"] = f"{old.get('description', '')} Refitted from its stored samples by workbench.native.refit."
    # the steadiness verdict as measured; the stage factors as today's rule finds them
    kept = {k: v for k, v in old.get("calibration", {}).items() if k != "stage_factors"}
    merged = {**kept, **parts.pop("calibration", {})} if kept else {}
    new = {**header, "rules": dict(RULES), **parts, **({"calibration": merged} if merged else {})}
    parse_profile(new, file=f"{path} (refitted)")  # what replay will read must parse
    return new


def _leaves(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        if "v" in node and not isinstance(node["v"], dict):
            yield prefix, node["v"]
            return
        for k, v in node.items():
            if k not in ("source", "derived", "rules", "description"):
                yield from _leaves(v, f"{prefix}.{k}" if prefix else str(k))
    elif not isinstance(node, list):
        yield prefix, node


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(field, old value, new value) for every value the refit moved, added or removed."""
    a, b = dict(_leaves(old)), dict(_leaves(new))
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b), key=str) if a.get(k) != b.get(k)]


def label(profile_path: str | Path) -> str:
    """A calibration's name in tables: its folder for an out-dir's ``host.yaml``, else the file's stem."""
    path = Path(profile_path)
    return path.parent.name if path.name == "host.yaml" else path.stem


def price_table(pairs: Sequence[tuple[str, dict[str, Any], dict[str, Any]]], stores: Sequence[str]) -> pl.DataFrame:
    """Per (calibration, store): the D.3 MAE, pooled and target-only errors under the stored profile and
    under its refit (``pairs``: label, stored, refitted)."""
    rows = []
    for store in stores:
        runs = load_runs(store)  # once per store: every profile re-prices the same runs
        for name, old, new in pairs:
            row: dict[str, Any] = {"calibration": name, "store": store}
            for tag, raw in (("stored", old), ("refit", new)):
                row |= {f"{tag}_{k}": v for k, v in d3_errors(runs, raw, f"{name} ({tag})").items()}
            rows.append(row)
    return pl.DataFrame(rows)


def markdown(table: pl.DataFrame, command: str, split: str | None) -> str:
    """The stored-against-refitted prices as a docs/results.md section body: machine, command, date."""
    from .agreement_report import repricing_head

    head = [*repricing_head("D.3 of stored native runs under stored calibrations, as fitted then and refitted now",
                            command, split, "calibrations and stores were measured on the machines their profiles "
                                            "and agreement lines name"),
            "| calibration | store | As²d MAE % stored → refit | pooled % stored → refit | "
            "target-only MAE % stored → refit |", "|---|---|---|---|---|"]
    rows = [f"| {r['calibration']} | `{r['store']}` | {r['stored_mae_pct']:.2f} → {r['refit_mae_pct']:.2f} | "
            f"{r['stored_pooled_pct']:+.2f} → {r['refit_pooled_pct']:+.2f} | "
            f"{r['stored_target_only_mae_pct']:.2f} → {r['refit_target_only_mae_pct']:.2f} |"
            for r in table.iter_rows(named=True)]
    means = table.select(pl.exclude("calibration", "store").abs().mean())
    rows.append("| mean (pooled: of its size) | | " + " | ".join(
        f"{means[f'stored_{c}'][0]:.2f} → {means[f'refit_{c}'][0]:.2f}"
        for c in ("mae_pct", "pooled_pct", "target_only_mae_pct")) + " |")
    return "\n".join(head + rows) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Fit stored host calibrations again from their raw samples (D.2).")
    ap.add_argument("profiles", nargs="+", help="host profiles written by python -m workbench.native.calibrate")
    ap.add_argument("--out-dir", required=True, help="where to write each refitted profile (<name>.yaml)")
    ap.add_argument("--stores", nargs="*", default=[],
                    help="native_runs.json files to price under each stored and refitted profile")
    ap.add_argument("--markdown", default=None, help="also write the price table as a section of this file")
    ap.add_argument("--no-stage-speed", action="store_true",
                    help="fit the samples as timed, without bringing each stage to the anchor's speed (R_STAGE)")
    ap.add_argument("--section", default=SECTION, help="the section's name")
    ap.add_argument("--split", default=None, help="the stores' split, as the section names it (e.g. 'bench dev')")
    args = ap.parse_args(argv)
    command = "python -m workbench.native.refit " + shlex.join(argv or sys.argv[1:])
    pairs = []
    try:
        for path in args.profiles:
            old = read_profile(path)
            new = refit(path, old, stage_speed=not args.no_stage_speed)
            moved = changes(old, new)
            out = write_profile(new, Path(args.out_dir) / f"{label(path)}.yaml")
            print(f"wrote {out}: {len(moved)} value(s) moved by today's fit rules")
            for field, was, now in moved:
                print(f"  {field}: {was} -> {now}")
            pairs.append((label(path), old, new))
        table = price_table(pairs, args.stores) if args.stores else None
    except WorkbenchError as err:
        sys.exit(err.headline())
    if table is None:
        return
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=220, float_precision=2, fmt_str_lengths=70):
        print(table)
    if args.markdown:
        from workbench.io import write_section

        print(f"results table -> {write_section(args.markdown, args.section, markdown(table, command, args.split))}")


if __name__ == "__main__":
    main()
