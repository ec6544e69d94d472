"""The command line's one JSON printer, shared by ``gpu/__main__.py`` and every command module
(a command module importing ``gpu.__main__`` back would be an import cycle)."""

from __future__ import annotations

import json
import sys


def print_json(data: dict) -> None:
    """``data`` on stdout as indented JSON (anything JSON lacks, such as a Path, as its str)."""
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


__all__ = ["print_json"]
