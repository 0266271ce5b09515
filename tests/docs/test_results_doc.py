"""docs/results.md: sections a command rewrites in place, each table naming machine, command, split."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from workbench.errors import DataError
from workbench.io import replace_section
from workbench.io import section_markers as markers
from workbench.results_doc import RESULTS, fragment_body, main, sections

DOC = "# Results\n\nintro\n\n<!-- a -->\nold a\n<!-- /a -->\n\nbetween\n\n<!-- b -->\nold b\n<!-- /b -->\ntail\n"


def test_a_section_is_replaced_and_nothing_else_moves():
    new = replace_section(DOC, "a", "new a\n| x |\n")
    assert new == DOC.replace("old a", "new a\n| x |")
    assert replace_section(new, "a", "old a") == DOC  # rewriting is idempotent: only the section changes
    assert sections(DOC) == ["a", "b"]


def test_a_missing_section_is_appended_and_a_bad_name_refused():
    new = replace_section(DOC, "c-1", "c body")
    assert new.startswith(DOC.rstrip()) and new.endswith("<!-- c-1 -->\nc body\n<!-- /c-1 -->\n")
    with pytest.raises(DataError, match="section name"):
        markers("no spaces")


def test_a_fragment_placed_under_another_name_keeps_no_markers_of_its_own(tmp_path: Path):
    frag = tmp_path / "frag.md"
    frag.write_text("<!-- d3-agreement -->\n**table**\n| a |\n<!-- /d3-agreement -->\n")
    doc = tmp_path / "results.md"
    doc.write_text(DOC)
    main(["b", "--markdown", str(frag), "--doc", str(doc)])
    assert sections(doc.read_text()) == ["a", "b"]  # no section inside b
    assert "<!-- b -->\n**table**\n| a |\n<!-- /b -->" in doc.read_text()
    assert fragment_body("plain\n") == "plain\n"  # a fragment without markers is placed as it is
    two = "<!-- a -->\nx\n<!-- /a -->\n<!-- b -->\ny\n<!-- /b -->"
    assert fragment_body(two) == two  # two sections are not one table: left whole


def test_a_run_becomes_a_table_under_its_machine_command_split_and_date(tmp_path: Path, capsys):
    out = tmp_path / "run"
    (out / "tables").mkdir(parents=True)
    pl.DataFrame({"device": ["k70_pro", "k70_pro"], "method": ["target_only", "as2d"], "tps": [10.0, 17.25],
                  "speedup": [1.0, 1.725], "extra": [0, 1]}).write_parquet(out / "tables" / "summary.parquet")
    doc = tmp_path / "results.md"
    doc.write_text(DOC)
    main(["b", "--run", str(out), "--command", "python -m workbench.run experiment=replay", "--split", "test",
          "--doc", str(doc)])
    body = doc.read_text().split("<!-- b -->")[1].split("<!-- /b -->")[0]
    assert "- command: `python -m workbench.run experiment=replay`" in body and "- split: test" in body
    assert re.search(r"- machine: .+, \d+ cores; torch \S+, MNN \S+", body)
    assert re.search(r"- run date: \d{4}-\d\d-\d\d", body)
    assert "| k70_pro | as2d | 17.250 | 1.725 |" in body and "extra" not in body
    assert "old a" in doc.read_text()  # the other section is untouched
    with pytest.raises(SystemExit):
        main(["b", "--run", str(out), "--doc", str(doc)])  # a table without its command and split is refused
    with pytest.raises(DataError, match="summary.parquet"):
        main(["b", "--run", str(tmp_path / "nothing"), "--command", "x", "--split", "test", "--doc", str(doc)])


def test_every_table_in_docs_results_names_machine_command_split_and_date():
    doc = RESULTS.read_text()
    names = sections(doc)
    assert {"native-bench-test", "d3-agreement", "adaptive", "demo"} <= set(names)
    for name in names:
        start, end = markers(name)
        body = doc[doc.index(start) + len(start):doc.index(end)]
        if "|---" in body:
            for field in ("machine", "command", "split"):
                assert re.search(rf"\b{field}\b", body, re.I), f"section {name}: its table does not name its {field}"
            assert re.search(r"\d{4}-\d\d-\d\d", body), f"section {name}: its table does not name its run date"
            assert re.search(r"cores", body), f"section {name}: the machine line names no core count"
        else:
            assert re.search(r"Not (measured|recorded) yet", body) and "Run `" in body, (
                f"section {name}: an empty section says so and names the command that fills it")
