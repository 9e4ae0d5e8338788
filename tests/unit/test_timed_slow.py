"""``tests/timed_slow.txt`` names tests that exist (a renamed test would silently run on both CI
legs again, and the list would rot)."""

from pathlib import Path

from tests.conftest import _TIMED_SLOW

ROOT = Path(__file__).resolve().parents[2]


def test_every_listed_test_exists():
    missing = []
    for entry in sorted(_TIMED_SLOW):
        path, _, func = entry.partition("::")
        source = ROOT / path
        if not source.is_file() or f"def {func}(" not in source.read_text():
            missing.append(entry)
    assert not missing, f"tests/timed_slow.txt names tests that do not exist: {missing}"
