"""CI's escape hatches stay closed: an unexpected skip -- module-level too -- fails a CI run.

Each case runs pytest (in process) on a scratch project that uses this suite's own
``tests/conftest.py``, so the guard is exercised exactly as ``.ci/run`` would meet it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ALLOWED_CI_SKIPS

pytest_plugins = ["pytester"]
CONFTEST = (Path(__file__).parent / "conftest.py").read_text()


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    tests = pytester.mkdir("tests")  # no __init__: the scratch conftest must not shadow tests.conftest
    (tests / "conftest.py").write_text(CONFTEST)
    (tests / "test_fine.py").write_text("def test_fine():\n    assert sum([1, 2]) == 3\n")
    return pytester


def _run(p: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str | None) -> pytest.RunResult:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    return p.runpytest_inprocess("-q", "-p", "no:cacheprovider", "tests")


def test_a_module_level_skip_fails_a_ci_run(project, monkeypatch):
    (project.path / "tests" / "test_needs_pkg.py").write_text(
        "import pytest\npytest.importorskip('a_package_nobody_installed', reason='apt-get install x')\n"
        "def test_x():\n    pass\n")
    res = _run(project, monkeypatch, "true")
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    res.stdout.fnmatch_lines(["*unexpected skips in CI*", "tests/test_needs_pkg.py*apt-get install x*"])
    # Outside CI the same skip is only reported.
    assert _run(project, monkeypatch, None).ret == pytest.ExitCode.OK


def test_a_runtime_skip_fails_a_ci_run_and_false_means_off(project, monkeypatch):
    (project.path / "tests" / "test_skip.py").write_text(
        "import pytest\ndef test_s():\n    pytest.skip('no weights')\n")
    assert _run(project, monkeypatch, "1").ret == pytest.ExitCode.TESTS_FAILED
    assert _run(project, monkeypatch, "false").ret == pytest.ExitCode.OK


def test_only_the_allow_listed_test_id_may_skip(project, monkeypatch):
    models = project.mkdir("tests/models")
    body = ("import pytest\n@pytest.mark.skip(reason='needs torchvision')\n"
            "def test_omni_prompt_with_a_processor():\n    pass\n")
    (models / "test_audio_lm_loading.py").write_text(body)
    assert _run(project, monkeypatch, "true").ret == pytest.ExitCode.OK
    # The same reason under any other test id is not allowed: the list is by id, not by word.
    (models / "test_other.py").write_text(body.replace("test_omni_prompt_with_a_processor", "test_other"))
    assert _run(project, monkeypatch, "true").ret == pytest.ExitCode.TESTS_FAILED


def test_the_allow_list_names_tests_that_exist():
    for test_id in ALLOWED_CI_SKIPS:
        path, name = test_id.split("::")
        assert f"def {name}(" in (Path(__file__).parents[1] / path).read_text(), test_id
