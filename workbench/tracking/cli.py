"""Mark runs whose process is gone FAILED: ``python -m workbench.tracking reap [--uri URI] [--dry-run]``."""

from __future__ import annotations

import argparse

from workbench.tracking.runs import reap
from workbench.tracking.store import prepare_store, tracking_uri


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workbench.tracking", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    rp = sub.add_parser("reap", help="mark runs whose process is gone FAILED")
    rp.add_argument("--uri", help="tracking store (default: MLFLOW_TRACKING_URI, else sqlite:///mlruns/mlflow.db)")
    rp.add_argument("--dry-run", action="store_true", help="report, change nothing")
    args = ap.parse_args(argv)
    uri = tracking_uri(".", args.uri)
    prepare_store(uri)
    states = reap(uri, dry_run=args.dry_run)
    for s in states:
        what = {"reaped": "would mark FAILED" if args.dry_run else "marked FAILED", "alive": "still running",
                "remote": "owner on another host: left alone", "unowned": "no owner tags: left alone"}[s.verdict]
        print(f"{s.run_id}  {s.name:<24} {s.owner:<28} {what}")
    n = sum(s.verdict == "reaped" for s in states)
    print(f"{n} run(s) {'to reap' if args.dry_run else 'reaped'}; {len(states)} RUNNING run(s) seen in {uri}")
    return 0
