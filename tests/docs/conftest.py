"""The recipe tests reuse the dataset tests' piper clips and the phone tests' loopback phone."""

from tests.data.conftest import speech  # noqa: F401  (fixture)
from tests.phone_runner.conftest import adb_server, loopback  # noqa: F401  (fixtures)
