"""The reference documents stay current with the code they describe.

ARCHITECTURE.md names every scheme of the catalog; ``conf/config.yaml``'s ``job:`` comment lists
every job of ``workbench/run.py``; PROTOCOL.md names every scheme protocol v1 carries and every
host-only one as such; every README's backticked repository paths exist.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from phone_runner.protocol import HOST_ONLY_SCHEMES, SCHEME_NAMES
from workbench.decoding.schemes.catalog import CATALOG
from workbench.run import JOBS

ROOT = Path(__file__).resolve().parents[2]


def ticked(text: str) -> set[str]:
    return set(re.findall(r"`([^`\s]+)`", text))


def test_architecture_names_every_catalog_scheme():
    missing = [name for name in CATALOG if name not in ticked((ROOT / "ARCHITECTURE.md").read_text())]
    assert not missing, f"ARCHITECTURE.md's scheme catalog does not name {missing}"


def test_config_job_list_names_every_job_of_run_py():
    text = (ROOT / "conf/config.yaml").read_text()
    block = re.search(r"^job: \w+ +#(.*?)\n(?=\S)", text, re.M | re.S)
    assert block, "conf/config.yaml: the job: line lists the jobs in its comment"
    listed = set(re.findall(r"\b[a-z][a-z_]+\b", block.group(1).split(":", 1)[1]))
    assert set(JOBS) <= listed, f"conf/config.yaml's job list lacks {sorted(set(JOBS) - listed)}"
    assert not {w for w in listed if "_" in w} - set(JOBS), "conf/config.yaml lists a job run.py lacks"


def test_protocol_names_what_v1_carries_and_what_is_host_only():
    text = (ROOT / "phone_runner/PROTOCOL.md").read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| `scheme` |"))
    carried = re.search(r"name one of the catalog's `SCHEMES` \((.*?)[;)]", row)
    host = re.search(r"adaptive schemes \((.*?)\) run in replay and on the host only", row)
    assert carried and host, "PROTOCOL.md's scheme row names the v1 schemes, then the host-only ones"
    assert ticked(carried.group(1)) == set(SCHEME_NAMES), carried.group(1)
    assert ticked(host.group(1)) == set(HOST_ONLY_SCHEMES), host.group(1)
    assert set(SCHEME_NAMES) | set(HOST_ONLY_SCHEMES) == set(CATALOG)


def test_every_readme_names_paths_that_exist():
    files = subprocess.run(["git", "ls-files", "*README.md", "ARCHITECTURE.md", "phone_runner/PROTOCOL.md",
                            "docs/*.md"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert "README.md" in files
    missing = []
    for f in files:
        base = (ROOT / f).parent
        for p in ticked((ROOT / f).read_text()):
            looks_like_path = re.fullmatch(r"[\w.-]+(/[\w.-]+)+/?", p) and not re.search(r"/build[\w-]*/", p)
            if looks_like_path and p.split("/")[0] in {"workbench", "phone_runner", "conf", "tests", "notebooks",
                                                        "docs", "benchmarks", "scripts", ".ci"}:
                if not ((ROOT / p).exists() or (base / p).exists()):
                    missing.append(f"{f}: {p}")
    assert not missing, "paths named in the docs that do not exist:\n" + "\n".join(missing)


def test_phone_runner_readme_lists_every_module():
    text = (ROOT / "phone_runner/README.md").read_text()
    names = ticked(text)
    missing = [p.name for p in sorted((ROOT / "phone_runner").glob("*.py"))
               if p.name != "__init__.py" and p.name not in names]
    assert not missing, f"phone_runner/README.md's table does not list {missing}"


def test_notebooks_readme_lists_every_notebook():
    names = ticked((ROOT / "notebooks/README.md").read_text())
    missing = [p.stem for p in sorted((ROOT / "notebooks").glob("*.py")) if p.stem not in names]
    assert not missing, f"notebooks/README.md's table does not list {missing}"
