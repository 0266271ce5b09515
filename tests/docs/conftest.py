"""The recipe tests reuse the dataset tests' piper clips (the loopback phone comes from tests/conftest.py)."""

from tests.data.conftest import speech  # noqa: F401  (fixture)
