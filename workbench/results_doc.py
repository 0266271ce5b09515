"""``docs/results.md``, written by the commands that produce its tables.

Each table lives between ``<!-- NAME -->`` and ``<!-- /NAME -->`` (the markers
``workbench.native.bench --markdown`` writes too); ``workbench.io.write_section`` replaces one section
atomically and leaves every other byte of the file alone, so a command regenerates its own table
instead of someone retyping it. Every section names its machine (CPU
model, cores, torch and MNN versions), the exact command, the split it used and the run date.

    python -m workbench.results_doc NAME --markdown FILE
        place a fragment a command wrote (``python -m workbench.native.bench --markdown FILE``)
    python -m workbench.results_doc NAME --run OUT_DIR --command "python -m workbench.run ..." --split test
        a job's ``tables/summary.parquet`` as a table, under the machine, command, split and date
"""

from __future__ import annotations

import argparse
import datetime
import re
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from workbench.errors import DataError
from workbench.io import SECTION_NAME, section_markers, write_section

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results.md"
RUN_COLUMNS = ("device", "method", "tps", "speedup", "acceptance", "coverage", "readiness", "slowdown_share")


def fragment_body(text: str) -> str:
    """A fragment's table: a command's ``--markdown FILE`` writes its section between its own markers, and
    placing it under another name (``d3-agreement-xeon``) keeps only what lies between them, so the
    document never holds a section inside a section. A fragment without markers is placed as it is."""
    names = sections(text)
    if len(names) == 1:
        start, end = section_markers(names[0])
        inner = text.strip()
        if inner.startswith(start) and inner.endswith(end):
            return inner[len(start):-len(end)].strip("\n")
    return text


def sections(doc: str) -> list[str]:
    """The section names of a results document, in order."""
    return re.findall(rf"<!-- ({SECTION_NAME.pattern}) -->", doc)


def frame_table(frame: pl.DataFrame, columns: Sequence[str] | None = None, digits: int = 3) -> str:
    """A markdown table of ``frame`` (``columns`` that it has, in that order)."""
    cols = [c for c in (columns or frame.columns) if c in frame.columns]
    rows = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in frame.select(cols).iter_rows():
        rows.append("| " + " | ".join(_cell(v, digits) for v in r) + " |")
    return "\n".join(rows)


def _cell(v: object, digits: int) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return ""
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def run_section(out_dir: str | Path, title: str, command: str, split: str,
                columns: Sequence[str] = RUN_COLUMNS, table: str = "summary") -> str:
    """A section from a job's output directory: title, machine, command, split, date, then one of its
    tables (``tables/<table>.parquet``, or the job's own ``summary.parquet``)."""
    found = [p for p in (Path(out_dir) / "tables" / f"{table}.parquet", Path(out_dir) / f"{table}.parquet")
             if p.is_file()]
    if not found:
        raise DataError(f"no tables/{table}.parquet", where=str(out_dir),
                        fix="pass the job's out_dir (its run directory), after the job finished")
    summary = found[0]
    frame = pl.read_parquet(summary)
    date = datetime.date.fromtimestamp(summary.stat().st_mtime).isoformat()
    from workbench.native.bench_report import machine_line

    head = [f"**{title}**", "", f"- machine: {machine_line()}", f"- command: `{command}`", f"- split: {split}",
            f"- run date: {date}", ""]
    return "\n".join(head) + "\n" + frame_table(frame, columns) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Replace one section of docs/results.md with a command's table.")
    ap.add_argument("name", help="the section: the NAME of <!-- NAME --> ... <!-- /NAME -->")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--markdown", help="a markdown fragment a command wrote")
    src.add_argument("--run", help="a job's out_dir: its tables/summary.parquet becomes the table")
    ap.add_argument("--title", default=None, help="--run: the table's title (default: the section name)")
    ap.add_argument("--command", default=None, help="--run: the exact command that produced the run")
    ap.add_argument("--split", default=None, help="--run: the split the run used (test, dev, demo, SYNTHETIC)")
    ap.add_argument("--table", default="summary", help="--run: which of the job's tables (tables/<table>.parquet)")
    ap.add_argument("--columns", nargs="*", default=list(RUN_COLUMNS), help="--run: the table's columns to show")
    ap.add_argument("--doc", default=str(RESULTS), help="the results document (default docs/results.md)")
    args = ap.parse_args(argv)
    if args.markdown:
        body = fragment_body(Path(args.markdown).read_text())
    else:
        if not args.command or not args.split:
            ap.error("--run needs --command and --split: every table names both")
        body = run_section(args.run, args.title or args.name, args.command, args.split, args.columns, args.table)
    print(f"results section {args.name} -> {write_section(args.doc, args.name, body)}")


if __name__ == "__main__":
    main()
