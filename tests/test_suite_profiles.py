"""The test suite never calibrates into this machine's profile cache (tests/conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

from workbench.models.cache import cache_root
from workbench.native.fingerprint import PROFILE_DIR_ENV, profile_cache_dir


def test_the_suites_calibrations_stay_out_of_this_machines_cache():
    own = Path(os.environ[PROFILE_DIR_ENV])
    assert profile_cache_dir() == own and own.is_dir()
    assert own != cache_root() / "host_profiles" and cache_root() not in own.parents
