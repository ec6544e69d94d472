"""Who is using the lab: "you" on your own machine; on a class's shared demo, the display name a learner picked.

Kept by a cookie, not the URL. Streamlit 1.67 reads the browser's cookies (``st.context.cookies``, sent with
the page's connection) and can run a line of JavaScript (``st.html(..., unsafe_allow_javascript=True)``)
that sets one; a cookie then comes back on every reload, in every new tab and on every page of the lab.
Query parameters (``st.query_params``) would be kept by a reload only: a page link in the sidebar or a
new tab opens a URL without them, and a URL copied to a classmate would hand over the name.

The cookie holds the name and a random secret made by this browser when it claimed the name
(``gpu.service.learners``): the same name with another secret is refused as taken. No passwords:
clearing the cookie loses the name (the teacher's class view still shows its work).

Everything a learner does is filed under them: History's "Your runs" (the session id a run is saved
with is ``learner:<name>``), Write a kernel's submissions, progress and hints, the leaderboard's name.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from urllib.parse import quote, unquote

import streamlit as st

from gpu.core.settings import settings
from gpu.service.learners import LOCAL_NAME, SECRET_HEX_CHARS, LearnerId, LearnerStore, NameRefused, new_secret
from gpu.service.store import StoreError
from ui.run_record import SESSION_KEY

COOKIE = "kernel_lab_learner"
COOKIE_DAYS = 365
STATE = "learner.current"  # this session's LearnerId, once known
SECRET = "learner.secret"  # this browser's secret, to write the cookie again on each page
TEACHER = "learner.teacher"  # True once this session gave the teacher's token
NAME_INPUT = "learner.name"
FORGOTTEN = "learner.forgotten"  # this session forgot its name: the cookie it arrived with no longer counts
LOCAL = LearnerId(LOCAL_NAME, LOCAL_NAME)


def class_mode() -> bool:
    """Whether this server is a class's shared demo (``KERNEL_LAB_CLASS=1``, set by ``make demo``)."""
    return settings().class_mode


def session_id_for(learner: LearnerId) -> str:
    """The id History files a learner's runs under (``runs.session_id``)."""
    return f"learner:{learner.key}"


def current() -> LearnerId | None:
    """This session's learner: ``LOCAL`` on your own machine; in class mode the name this browser claimed (from this
    session, else its cookie), or None before the learner picks one."""
    if not class_mode():
        st.session_state.setdefault(SESSION_KEY, session_id_for(LOCAL))
        return LOCAL
    known = st.session_state.get(STATE)
    if known is not None or st.session_state.get(FORGOTTEN):
        return known
    found = _from_cookie()
    if found is not None:
        name, secret = found
        try:
            learner = LearnerStore().known(name, secret)
        except StoreError:
            learner = None
        if learner is not None:
            _adopt(LearnerId(learner.key, learner.name), secret)
    return st.session_state.get(STATE)


def _from_cookie() -> tuple[str, str] | None:
    try:
        raw = st.context.cookies.get(COOKIE)
    except Exception:  # AppTest and bare script runs have no browser request
        return None
    if not raw or len(raw) <= SECRET_HEX_CHARS:
        return None
    return unquote(raw[SECRET_HEX_CHARS:]), raw[:SECRET_HEX_CHARS]


def _adopt(learner: LearnerId, secret: str) -> None:
    st.session_state.pop(FORGOTTEN, None)
    st.session_state[STATE] = learner
    st.session_state[SECRET] = secret
    st.session_state[SESSION_KEY] = session_id_for(learner)


def claim(name: str) -> str | None:
    """Claim ``name`` for this browser (a new secret, kept in its cookie); the refusal in words, or None."""
    secret = new_secret()
    try:
        learner = LearnerStore().claim(name, secret)
    except NameRefused as exc:
        return str(exc)
    except StoreError as exc:
        return f"names cannot be kept on this server: {exc}"
    _adopt(LearnerId(learner.key, learner.name), secret)
    return None


def _write_cookie(value: str, max_age_s: int) -> None:
    line = f"{COOKIE}={value}; path=/; max-age={max_age_s}; SameSite=Lax"
    st.html(f"<script>document.cookie = {json.dumps(line)};</script>", unsafe_allow_javascript=True)


def forget() -> None:
    """Forget the learner in this session and this browser (a shared computer: the next person picks a name)."""
    for key in (STATE, SECRET, SESSION_KEY):
        st.session_state.pop(key, None)
    st.session_state[FORGOTTEN] = True


def sidebar() -> None:
    """In class mode: who you are, or a box to pick a name; keeps the cookie written. Nothing on your own machine."""
    if not class_mode():
        current()  # files this session's runs under "you"
        return
    if teacher():  # the teacher reads the class; they are not one of its learners
        st.markdown(":material/school: **Teacher**", help="This session gave the Class page the teacher's token.")
        return
    if st.session_state.get(FORGOTTEN) and st.session_state.get(STATE) is None:
        _write_cookie("", 0)
    refusal = None
    if current() is None:
        with st.form("learner.pick", border=False, enter_to_submit=True):
            name = st.text_input(
                "Your name on the leaderboard",
                key=NAME_INPUT,
                max_chars=40,
                placeholder="a name your teacher will recognise",
                help="No account and no password: this browser keeps the name (a cookie) and it is yours on this lab. "
                "Your runs, submissions, progress and hints follow it.",
            )
            if st.form_submit_button("Use this name", icon=":material/badge:"):
                refusal = claim(name)
    learner = st.session_state.get(STATE)
    if learner is None:
        if refusal:
            st.error(refusal)
        else:
            st.caption("Pick a name to keep your runs and progress across reloads.")
        return
    _write_cookie(st.session_state[SECRET] + quote(learner.name, safe=""), COOKIE_DAYS * 86400)
    st.markdown(f":material/person: **{learner.name}**", help="Kept by this browser: reloads and new tabs keep it.")
    st.button("Not you? Forget this name here", key="learner.forget", on_click=forget, type="tertiary")


def teacher() -> bool:
    """Whether this session may see the class view: class mode, a token set at start, and this session gave it (the
    page's ``?teacher=`` query parameter, checked once, then kept in the session)."""
    token = settings().teacher_token
    if not (class_mode() and token):
        return False
    if st.session_state.get(TEACHER):
        return True
    given = st.query_params.get("teacher", "")
    if given and hmac.compare_digest(given.encode(), token.encode()):
        st.session_state[TEACHER] = True
        return True
    return False


@dataclass(frozen=True)
class Who:
    """What a page needs to file work: the learner (None in class mode before a name) and whether one is needed."""

    learner: LearnerId | None
    needs_name: bool


def who() -> Who:
    learner = current()
    return Who(learner, class_mode() and learner is None)


__all__ = ["COOKIE", "LOCAL", "Who", "class_mode", "claim", "current", "forget", "session_id_for", "sidebar",
           "teacher", "who"]
