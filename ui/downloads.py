"""Every download button of the lab goes through ``download`` here; no other module calls ``st.download_button``.

    from ui.downloads import download

    download(label, data, file_name, mime, *, key, stamp=False, help=None, icon=":material/download:",
             where=None)

- ``data``: text or bytes (sent as is); a callable returning them (built only on click, e.g. a notebook);
  a mapping or list (written as JSON, indented); a pandas DataFrame (written as CSV, no index).
- ``stamp=True`` says the file is a measurement: it carries ``methodology_version`` (the rules it was taken
  under, ``gpu.core.provenance``): a mapping gets the key, a DataFrame a column of that name. Text, bytes or
  a list cannot carry it (``TypeError``: hand the mapping or the frame instead). Leave it off for what is not
  a measurement made now (a learner's source, a notebook) or for records that carry their own version
  (History's saved runs each keep the version they were measured under: stamping them anew would lie).
- ``where``: the column or container to draw in (``st`` by default).

``prepared(...)`` is the same file without a page (pure: tests read what a button would send), and
``download_buttons(experiment, result)`` a declared experiment's pair: the run as JSON with its prose,
its samples as CSV, both stamped. ``tests/test_downloads.py`` fails on a ``download_button`` anywhere else.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import pandas as pd
import streamlit as st

from gpu.catalog.render import to_json
from gpu.core.provenance import METHODOLOGY_KEY, METHODOLOGY_VERSION
from gpu.core.provenance import stamp as stamped

if TYPE_CHECKING:
    from gpu.catalog.base import Experiment

Data: TypeAlias = str | bytes | Callable[[], str | bytes] | Mapping[str, Any] | list | pd.DataFrame


@dataclass(frozen=True)
class Download:
    """What one button sends: ``data`` is the file's text or bytes (or a callable building them on click)."""

    label: str
    data: str | bytes | Callable[[], str | bytes]
    file_name: str
    mime: str
    key: str


def _encoded(data: Data, stamp: bool, file_name: str) -> str | bytes | Callable[[], str | bytes]:
    if isinstance(data, pd.DataFrame):
        frame = data.assign(**{METHODOLOGY_KEY: METHODOLOGY_VERSION}) if stamp else data
        return frame.to_csv(index=False)
    if isinstance(data, Mapping):
        return json.dumps(stamped(dict(data)) if stamp else dict(data), indent=2, default=str)
    if stamp:
        raise TypeError(
            f"download {file_name!r}: a measurement is stamped with its methodology version, which only a mapping "
            f"(JSON) or a DataFrame (CSV) can carry, not {type(data).__name__}"
        )
    if isinstance(data, list):
        return json.dumps(data, indent=2, default=str)
    if isinstance(data, str | bytes) or callable(data):
        return data
    raise TypeError(f"download {file_name!r}: cannot write a {type(data).__name__} (text, bytes, mapping, list, "
                    "DataFrame or a callable returning text or bytes)")


def prepared(label: str, data: Data, file_name: str, mime: str, *, key: str, stamp: bool = False) -> Download:
    """The file a ``download`` button with these arguments sends (pure: no page needed)."""
    return Download(label, _encoded(data, stamp, file_name), file_name, mime, key)


def download(
    label: str,
    data: Data,
    file_name: str,
    mime: str,
    *,
    key: str,
    stamp: bool = False,
    help: str | None = None,
    icon: str | None = ":material/download:",
    where: Any = None,
) -> None:
    """One download button (see the module's docstring); a callable ``data`` is built only when clicked."""
    item = prepared(label, data, file_name, mime, key=key, stamp=stamp)
    (where or st).download_button(
        item.label, item.data, file_name=item.file_name, mime=item.mime, key=item.key, help=help, icon=icon,
        on_click="ignore",
    )


def downloads(experiment: Experiment, result: Any, stem: str | None = None) -> tuple[Download, Download]:
    """A declared experiment's JSON (with its prose) and CSV downloads of ``result``, both stamped."""
    stem = stem or experiment.key.replace("-", "_")
    return (
        prepared("Download run (JSON)", to_json(result), f"{stem}.json", "application/json",
                 key=f"{experiment.key}.download_json", stamp=True),
        prepared("Download samples (CSV)", result.to_frame(), f"{stem}.csv", "text/csv",
                 key=f"{experiment.key}.download_csv", stamp=True),
    )


def download_buttons(experiment: Experiment, result: Any, stem: str | None = None) -> None:
    """Two buttons side by side: the run as JSON, its samples as CSV."""
    for column, item in zip(st.columns(2), downloads(experiment, result, stem), strict=True):
        download(item.label, item.data, item.file_name, item.mime, key=item.key, where=column)
