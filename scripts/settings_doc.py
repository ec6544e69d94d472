"""Regenerate the table of docs/settings.md from the declarations in gpu/core/settings.py.

    .venv/bin/python scripts/settings_doc.py          # rewrite the table in docs/settings.md
    .venv/bin/python scripts/settings_doc.py --check  # exit 1 when the file's table is out of date

tests/test_settings.py fails when the table and the declarations differ; this fixes it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpu.core.settings import DOC_PATH, document


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    text = DOC_PATH.read_text(encoding="utf-8")
    wanted = document(text)
    if argv == ["--check"]:
        if wanted != text:
            print(f"{DOC_PATH} is out of date: run scripts/settings_doc.py", file=sys.stderr)
            return 1
        return 0
    if wanted != text:
        DOC_PATH.write_text(wanted, encoding="utf-8")
        print(f"wrote {DOC_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
