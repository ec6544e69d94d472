"""The order `make test` hands files to its workers (tests/conftest.py: ``scheduled``): the longest files first, each
file's tests together and in their own order."""

from __future__ import annotations

from dataclasses import dataclass

from tests.conftest import LONGEST_FIRST, ROOT, scheduled


@dataclass
class Item:
    nodeid: str


def test_every_file_named_longest_exists():
    """A renamed file would silently lose its early turn."""
    assert [name for name in LONGEST_FIRST if not (ROOT / name).is_file()] == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


def test_the_longest_files_go_first_then_the_most_tests_each_file_whole_and_in_order():
    second, first = LONGEST_FIRST[1], LONGEST_FIRST[0]
    items = [Item(n) for n in (
        "tests/test_a.py::one", f"{second}::x", "tests/test_b.py::one", "tests/test_b.py::two",
        f"{first}::y", "tests/test_a.py::two", f"{second}::z", "tests/test_b.py::three",
    )]
    assert [i.nodeid for i in scheduled(items)] == [
        f"{first}::y", f"{second}::x", f"{second}::z",
        "tests/test_b.py::one", "tests/test_b.py::two", "tests/test_b.py::three",  # three tests before two
        "tests/test_a.py::one", "tests/test_a.py::two",
    ]
