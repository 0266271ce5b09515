import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.loopback_fixtures import adb_server, loopback  # noqa: F401  (fixtures: one adb server per session)
from workbench.native.fingerprint import PROFILE_DIR_ENV

settings.register_profile(
    "default",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# CI: Hypothesis's own seeding (derandomize) so a CI failure reproduces and shrinks the same way.
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

# In CI every dependency is installed by .ci/run, so a skip means a missing install step: the run
# fails. Skips are collected from test reports *and* collection reports (a module-level
# ``pytest.skip``/``importorskip`` never reaches a test report), and the session's exit status is
# set at the end, after pytest has counted them -- so "10 passed, 1 skipped" exits 1.
# The one known exception, by test id: transformers' Qwen2.5-Omni processor needs torchvision,
# whose PyPI build does not import beside the pinned torch 2.13.0 CPU wheel.
ALLOWED_CI_SKIPS = frozenset({
    "tests/models/test_audio_lm_loading.py::test_omni_prompt_with_a_processor",
})

_unexpected_skips: list[str] = []
_suite_profiles: list[tuple[str, str | None]] = []


def pytest_configure(config: pytest.Config) -> None:
    """Every host calibration the suite measures (under its own load) goes to one folder of this run, never
    to this machine's cache (``$AS2D_PROFILE_DIR``, ``fingerprint.profile_cache_dir``): the next ``make demo``
    would price with it. Set on the controller; xdist workers start after this and inherit it. Tests of
    the cache's own layout unset it."""
    if not hasattr(config, "workerinput"):
        _suite_profiles.append((tempfile.mkdtemp(prefix="as2d-suite-profiles-"), os.environ.get(PROFILE_DIR_ENV)))
        os.environ[PROFILE_DIR_ENV] = _suite_profiles[-1][0]


def pytest_unconfigure(config: pytest.Config) -> None:
    """Puts back the folder that was set before: a pytest run in process (``tests/test_ci_guard.py`` runs
    this conftest inside a worker) must not leave the outer suite pointing at its deleted folder."""
    while _suite_profiles:
        d, before = _suite_profiles.pop()
        if before is None:
            os.environ.pop(PROFILE_DIR_ENV, None)
        else:
            os.environ[PROFILE_DIR_ENV] = before
        shutil.rmtree(d, ignore_errors=True)


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _record_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    if _in_ci() and report.skipped and not hasattr(report, "wasxfail") and report.nodeid not in ALLOWED_CI_SKIPS:
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
        _unexpected_skips.append(f"{report.nodeid or '<collection>'}: {reason}")


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _record_skip(report)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _record_skip(report)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _unexpected_skips and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int) -> None:  # noqa: ANN001 - pytest hook
    if _unexpected_skips:
        terminalreporter.section("unexpected skips in CI (a missing install step?)", red=True)
        for line in _unexpected_skips:
            terminalreporter.line(line, red=True)
        terminalreporter.line(f"{len(_unexpected_skips)} unexpected skip(s): the run fails (CI is set)", red=True)


# `make test` runs the suite on two pytest-xdist workers with `--dist loadfile`: a module's tests and
# fixtures stay on one worker. The reduced demo below is shared by tests/test_demo.py and
# tests/browser, which may land on different workers: the first builds it under a file lock in the
# run's common temporary folder, the other waits and reuses it.


def _run_root(factory: pytest.TempPathFactory) -> Path:
    """This test run's temporary folder, common to its xdist workers."""
    root = factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):  # noqa: ANN201 - pytest hook
    """A test marked ``serial`` asserts timing on this machine's cores (what a producer racing the target
    achieves, a measured price against a host sweep), so it runs alone: it takes the run's lock
    exclusively, every other test shares it (a turnstile keeps the sharers from starving it). Setup and
    teardown, module fixtures included, run under the lock. One worker (plain ``pytest``): the lock is
    never contended."""
    import fcntl

    root = _run_root(item.config._tmp_path_factory)  # type: ignore[attr-defined] - tmp_path's own factory
    alone = item.get_closest_marker("serial") is not None
    with open(root / "serial.turnstile", "a") as turn, open(root / "serial.lock", "a") as lock:
        fcntl.flock(turn, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turn, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(turn, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory):
    """The reduced demo, run ONCE per test run (tests/test_demo.py, tests/browser): (dir, db, stdout)."""
    from filelock import FileLock

    root = _run_root(tmp_path_factory)  # shared by this run's workers
    d = root / "demo"
    db = d / "mlflow.db"
    said = d / "stdout.txt"
    with FileLock(str(root / "demo.lock")):
        if not said.is_file():
            d.mkdir(exist_ok=True)
            res = subprocess.run(
                [sys.executable, "-m", "workbench.run", "experiment=demo", "dataset.max_windows=4",
                 "native.max_windows=1", "native.repeats=1", "budgets=[1,3,7]", f"tracking.uri=sqlite:///{db}",
                 f"hydra.run.dir={d}/out", "calibration.attempts=1"],  # one: the suite loads the machine
                cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=3000,
                # its calibration runs beside other tests: never this machine's cached profile
                env={**os.environ, PROFILE_DIR_ENV: str(d / "host_profiles")})
            assert res.returncode == 0, res.stderr[-4000:]
            said.write_text(res.stdout)  # written last: its presence means the demo finished
    return d, db, said.read_text()
