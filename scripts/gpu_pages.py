"""After the GPU checks: render every page under Streamlit's AppTest on the GPU and keep what each showed.

Writes pages.json into the folder given: per page, whether it rendered without an exception,
its errors and warnings, and the first lines of its text (markdown, captions). Exit 1 when any
page raised.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent


def render(path: Path) -> dict:
    at = AppTest.from_file(str(path), default_timeout=60)
    at.run()
    texts = [m.value for m in at.markdown][:12] + [c.value for c in at.caption][:6]
    return {"page": path.name, "ok": not at.exception, "exceptions": [e.value for e in at.exception],
            "errors": [e.value for e in at.error], "warnings": [w.value for w in at.warning], "text": texts}


def main(out: Path) -> int:
    files = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
    results = []
    for path in files:
        try:
            results.append(render(path))
        except Exception as exc:  # a page that cannot even load is recorded, not fatal
            results.append({"page": path.name, "ok": False, "exceptions": [repr(exc)]})
        print(f"  {path.name}: {'ok' if results[-1]['ok'] else 'RAISED'}", flush=True)
        # after every page: a step stopped at its budget keeps the pages it rendered
        (out / "pages.json").write_text(json.dumps(results, indent=2, default=str))
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
