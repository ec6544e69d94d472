"""Code and docs say what a thing does, not which ticket asked for it: the tracker is not in the repository."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICKET = re.compile("[Ii]ssue" + r" \d+")  # spelled in two parts, so this file does not match itself


def test_no_file_in_the_repository_names_a_numbered_issue():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    found = []
    for name in files:
        path = ROOT / name
        if path.suffix not in {".py", ".md", ".toml", ".txt", ".sh", ".cfg"} and path.name != "Makefile":
            continue
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if TICKET.search(line):
                found.append(f"{name}:{number}: {line.strip()[:80]}")
    assert found == [], "\n".join(found)
