"""Where the repository is, for tests that read its files or run its modules: one definition, so
a test file's depth under tests/ does not decide what it reads."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
