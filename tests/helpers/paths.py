"""Where the tests and the repository are, for tests in any folder."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
