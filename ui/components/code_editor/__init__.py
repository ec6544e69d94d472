"""A code editor for Python: CodeMirror 6 as a Streamlit Components v2 component.

Line numbers, Python highlighting, Tab/Shift-Tab indent and dedent (focus stays in the editor),
Ctrl+Enter (Cmd+Enter) asks for a run, and line markers for a refusal, a mismatch or a race.

The JavaScript bundle (dist/code_editor.js) is built by the Makefile (`make run`, `make demo`,
`make test`: npm ci + esbuild from frontend/), not committed. Without it ``available()`` is
False and a page falls back to ``st.text_area`` (``FALLBACK_NOTE`` says how to get the editor).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from gpu.core import settings as _settings

BUNDLE = Path(__file__).resolve().parent / "dist" / "code_editor.js"
KINDS = ("refusal", "mismatch", "race")
ENV_PLAIN = _settings.PLAIN_EDITOR.name  # "1": always the plain text area (AppTest cannot drive custom components)
FALLBACK_NOTE = (
    "Plain text box: the code editor's bundle is not built. `make run` builds it (npm ci + esbuild) and starts the app."
)
_STATE = "code_editor.seeds"  # session dict: key -> (seed, the source last returned, the text the browser loaded)
_registered: dict[str, object] = {}  # bundle mtime -> the component's mount function


@dataclass(frozen=True)
class Marker:
    line: int  # 1-based, in the editor's text
    kind: str  # one of KINDS
    message: str = ""


@dataclass(frozen=True)
class EditorResult:
    source: str
    run_requested: bool  # Ctrl+Enter (Cmd+Enter) was pressed in the editor on this run


def available() -> bool:
    """True when the bundle is built and the plain text area is not asked for."""
    return not _settings.settings().plain_editor and BUNDLE.is_file()


def _mount():
    """Register the component once per bundle build (a rebuilt bundle is picked up without a restart)."""
    stamp = str(BUNDLE.stat().st_mtime_ns)
    if stamp not in _registered:
        _registered.clear()
        _registered[stamp] = st.components.v2.component("kernel_lab.code_editor", js=BUNDLE.read_text(encoding="utf-8"))
    return _registered[stamp]


def _noop() -> None:
    pass


def code_editor(
    value: str,
    *,
    key: str,
    height: int = 380,
    markers: Sequence[Marker] = (),
    label: str = "Code editor",
) -> EditorResult:
    """Show ``value`` in the editor; return what it holds now and whether a run was asked for.

    The editor keeps its own text across reruns. Passing a ``value`` other than the source this
    function last returned (an upload, a reset) replaces the editor's text.

    The browser is sent the text it loads (``data["value"]``) only when it loads it: on the editor's first run, after
    a run without it (another problem or page: Streamlit dropped its state) and on a replacement. While the learner
    types, the element stays the same, and Streamlit sends a message it has sent before by its hash: sent with each
    new draft, the element carried the whole bundle (about 500 KB) to the browser on every run after an edit.
    """
    seeds = st.session_state.setdefault(_STATE, {})
    seed, returned, loaded = seeds.get(key, (0, None, value))
    if returned is not None and value != returned:
        seed += 1  # a fresh component state, and the browser loads the new text
    if f"{key}.{seed}" not in st.session_state:  # not drawn on the last run (or ever): the browser loads ``value``
        loaded = value
    marks = [
        {"line": int(m.line), "kind": m.kind, "message": m.message} for m in markers if m.kind in KINDS and m.line >= 1
    ]
    dark = getattr(getattr(st.context, "theme", None), "type", None) == "dark"
    result = _mount()(
        key=f"{key}.{seed}",
        data={  # unchanged while the learner types: the element (its 380 KB bundle inline) is not sent again
            "id": f"{key}.{seed}",
            "value": loaded,
            "markers": marks,
            "height": int(height),
            "dark": dark,
            "label": label,
        },
        height=int(height) + 2,
        on_value_change=_noop,
        on_run_change=_noop,
    )
    run = result.get("run")
    source = run if isinstance(run, str) else result.get("value") if isinstance(result.get("value"), str) else value
    seeds[key] = (seed, source, loaded)
    return EditorResult(source=source, run_requested=isinstance(run, str))


def markers_json(markers) -> str:
    """The markers as the browser gets them (for tests and debugging)."""
    return json.dumps([{"line": m.line, "kind": m.kind, "message": m.message} for m in markers])


__all__ = ["BUNDLE", "ENV_PLAIN", "EditorResult", "FALLBACK_NOTE", "KINDS", "Marker", "available", "code_editor"]
