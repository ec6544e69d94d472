"""The class view, for a teacher on a class's demo: who solved what, where the class is stuck, an export.

It exists only where the server was started with ``KERNEL_LAB_CLASS=1`` and ``KERNEL_LAB_TEACHER_TOKEN``, for a
session that opened it with ``?teacher=`` that token; anyone else finds no such page (and no link to it)."""

import streamlit as st

from gpu.catalog.base import PageLink
from ui.frame import frame
from ui.learner import teacher
from ui.views.class_view import show_class

PAGE = PageLink(
    "Class", ":material/school:", 90, "the teacher's view of a class: solved, stuck, failures, export", teacher=True
)

if not teacher():
    frame("Not found", ":material/search_off:")
    st.info("There is no such page on this lab.", icon=":material/search_off:")
    st.stop()

frame(PAGE.label, PAGE.icon, "Where the class stands on **Write a kernel**: read from the learners' own progress, "
      "updated each time you open or refresh this page. No learner's code is shown here.")
show_class()
