"""Jargon is explained where it appears, from the one glossary (ui/glossary.py).

Every page is opened as a newcomer would and its run buttons pressed at the defaults (Vector
add and Scaling at smaller sizes: the same words, a tenth of the time). Wherever a marked
glossary term appears in a metric's label, an input's label, a line of text or a table's
column header, that element's help tooltip holds the term's glossary sentence (or the text
itself does: Home's glossary). Expander and tab labels ("PTX for sm_90") cannot carry help and
are not checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui.glossary import GLOSSARY, terms_in

ROOT = Path(__file__).resolve().parent.parent
RUN_BUTTONS = ("Run", "Run probe", "Run sweep", "Measure launch overhead", "Measure bandwidth", "Compare strategies")
SMALLER = {  # widget key -> value: the page's words at a tenth of its default run's time
    "pages/1_Vector_add.py": {"n": "2^16"},
    "pages/2_Scaling.py": {"scaling.max_n": "2^16"},  # keys: Experiment.widget_key
}
PAGES = ["app.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))]


def after_default_runs(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=300)
    for key, value in SMALLER.get(page, {}).items():
        at.session_state[key] = value
    at.run()
    pressed = 0
    for label in RUN_BUTTONS:
        for button in [b for b in at.button if b.label == label]:
            button.click()
            at.run()
            pressed += 1
    assert not at.exception, at.exception
    if page != "pages/9_Write_a_kernel.py":  # a submission is judged and kept as a submission, not a History run
        saved = [c.value for c in at.caption if c.value.startswith("Saved to History as run")]
        assert len(saved) >= min(pressed, 1), f"{page}: {pressed} run buttons pressed, {len(saved)} runs saved"
    return at


def _column_helps(spec: str) -> dict[str, str]:
    """{column: help} from a dataframe's column config (the proto holds it as JSON)."""
    try:
        config = json.loads(spec or "{}")
    except ValueError:
        return {}
    return {name: (c or {}).get("help") or "" for name, c in config.items() if isinstance(c, dict)}


def unexplained(at: AppTest) -> list[str]:
    """Where a marked term shows without its glossary sentence in that element's help."""
    found: list[str] = []

    def check(kind: str, text: str, help_text: str | None) -> None:
        for term in terms_in(text):  # explained by its tooltip, or by the text itself (Home's glossary)
            if GLOSSARY[term] not in (help_text or "") + text:
                found.append(f"{kind} {text[:90]!r}: {term!r} without its glossary sentence")

    for metric in at.metric:
        check("metric", metric.label, metric.proto.help)
    for kind in ("text_input", "selectbox", "multiselect", "checkbox", "radio", "number_input", "toggle"):
        for widget in at.get(kind):
            check(kind, widget.label, getattr(widget, "help", None))
    for element in [*at.markdown, *at.caption]:
        check("caption" if element.is_caption else "text", element.value, element.proto.help)
    for frame in at.dataframe:
        helps = _column_helps(frame.proto.columns)
        for column in frame.value.columns:
            check("column", str(column), helps.get(str(column)))
    return found


@pytest.mark.parametrize("page", PAGES)
def test_every_marked_term_on_a_page_is_explained_where_it_appears(page):
    at = after_default_runs(page)
    problems = unexplained(at)
    assert not problems, "\n".join(problems)


def test_the_check_finds_an_unexplained_term():
    """The check can fail: a caption naming occupancy without help is reported, with help it is not."""
    script = (
        "import streamlit as st\n"
        "from ui.glossary import help_for\n"
        "st.caption('theoretical occupancy 50%')\n"
        "st.caption('theoretical occupancy 50%', help=help_for('theoretical occupancy 50%'))\n"
        "st.metric('Occupancy', '50%')\n"
    )
    at = AppTest.from_string(script).run()
    problems = unexplained(at)
    assert sorted(p.split()[0] for p in problems) == ["caption", "metric"], problems
