"""A declared experiment's downloads: the run as JSON (with its prose) and its samples as CSV.

Built from the result protocol alone (``to_json`` = ``to_dict()`` plus the report's prose,
``to_frame()``), so any declared experiment gets them; file names and widget keys come
from the declaration's key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import streamlit as st

from gpu.catalog.render import to_json

if TYPE_CHECKING:
    from gpu.catalog.base import Experiment


@dataclass(frozen=True)
class Download:
    label: str
    data: str
    file_name: str
    mime: str
    key: str


def downloads(experiment: Experiment, result: Any, stem: str | None = None) -> tuple[Download, Download]:
    """The JSON and CSV downloads of ``result`` (pure: tested without a page)."""
    stem = stem or experiment.key.replace("-", "_")
    return (
        Download(
            "Download run (JSON)",
            json.dumps(to_json(result), indent=2, default=str),
            f"{stem}.json",
            "application/json",
            f"{experiment.key}.download_json",
        ),
        Download(
            "Download samples (CSV)",
            result.to_frame().to_csv(index=False),
            f"{stem}.csv",
            "text/csv",
            f"{experiment.key}.download_csv",
        ),
    )


def download_buttons(experiment: Experiment, result: Any, stem: str | None = None) -> None:
    """Two buttons side by side: the run as JSON, its samples as CSV."""
    for column, item in zip(st.columns(2), downloads(experiment, result, stem)):
        column.download_button(item.label, item.data, file_name=item.file_name, mime=item.mime, key=item.key)
