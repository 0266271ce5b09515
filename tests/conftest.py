import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

# In CI every dependency is installed by .ci/run, so a skip means a missing install step: fail it.
# The one known exception: transformers' Qwen2.5-Omni processor needs torchvision, whose PyPI build
# does not import beside the pinned torch 2.13.0 CPU wheel.
ALLOWED_CI_SKIPS = ("torchvision",)


def pytest_runtest_makereport(item, call):  # noqa: ANN001 - pytest hook signature
    import pytest

    return None if not os.environ.get("CI") else _fail_unexpected_skip(item, call, pytest)


def _fail_unexpected_skip(item, call, pytest):  # noqa: ANN001
    from _pytest.runner import TestReport

    report = TestReport.from_item_and_call(item, call)
    if report.skipped and not any(word in str(report.longrepr) for word in ALLOWED_CI_SKIPS):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI (a missing install step?): {report.longrepr}"
    return report


def pytest_collectreport(report):  # noqa: ANN001 - module-level skips happen at collection
    if os.environ.get("CI") and report.skipped and not any(w in str(report.longrepr) for w in ALLOWED_CI_SKIPS):
        report.outcome = "failed"
