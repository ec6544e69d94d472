"""Reference runs: what the experiments look like on a real GPU, for every visitor.

Two kinds, both read-only and never written into a user's History:

- **recorded**: every committed ``benchmarks/*/check.json`` (the output of
  ``python -m gpu check``), validated by the check-file schema (gpu/service/check_schema.py) and rebuilt into the
  engine's own result objects, so pages draw them with the same chart builders as a
  live run. Provenance — device, driver, library versions, date, commit and command —
  comes from the file (``provenance`` in newer checks) or the ``SUMMARY.md`` beside it.
- **published**: the article's own T4 figures, printed in
  ``reference/first-gpu-kernel-article.txt``; "published in the article, not measured here".

Nothing here invents a figure: every number shown comes from one of those files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from gpu.catalog.registry import experiments
from gpu.core.l2 import recorded_l2_bytes

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS_DIR = ROOT / "benchmarks"
ARTICLE_TEXT = "reference/first-gpu-kernel-article.txt"  # in the shared folder beside the repository
PUBLISHED_LABEL = "published in the article, not measured here"
RECORDED_LABEL = "recorded on a real GPU, not measured in this session"


# --- provenance ---------------------------------------------------------------------------


def readable_time(iso: str | None) -> str:
    """'2026-11-29T23:47:40+00:00' -> '29 Nov 2026, 23:47 UTC' (unchanged when not ISO)."""
    if not iso:
        return "unknown date"
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    offset = when.utcoffset()
    zone = "UTC" if offset is not None and offset.total_seconds() == 0 else (when.strftime("%Z") or "")
    return f"{when.day} {when.strftime('%b %Y, %H:%M')} {zone}".strip()


@dataclass(frozen=True)
class Provenance:
    """Where a reference's figures come from. ``kind``: "recorded" or "published"."""

    kind: str
    source: str  # the file, relative to the repository (or the article's path)
    device: str
    date: str | None  # ISO 8601 when known
    driver: str | None = None
    runtime: str | None = None
    versions: Mapping[str, str | None] = field(default_factory=dict)
    commit: str | None = None
    command: str | None = None
    host: str | None = None
    note: str = ""

    @property
    def label(self) -> str:
        return PUBLISHED_LABEL if self.kind == "published" else RECORDED_LABEL

    @property
    def when(self) -> str:
        return readable_time(self.date) if self.kind == "recorded" else (self.date or "date not stated")

    def versions_text(self) -> str:
        keep = ("numba-cuda", "numba", "numpy", "cuda-bindings", "llvmlite")
        return ", ".join(f"{k} {self.versions[k]}" for k in keep if self.versions.get(k)) or "not recorded"

    def lines(self) -> list[str]:
        """Provenance in short lines, for a caption or an expander."""
        if self.kind == "published":
            return [f"{self.device} · {PUBLISHED_LABEL}", f"source: {self.source}", self.note]
        driver = (
            f"CUDA driver {self.driver}" + (f", runtime {self.runtime}" if self.runtime else "")
            if self.driver
            else "driver not recorded"
        )
        return [
            f"{self.device} · {driver} · {self.versions_text()}",
            f"recorded {self.when} · commit {self.commit or 'not recorded'} · host {self.host or 'not recorded'}",
            f"command: `{self.command or 'python -m gpu check'}` · file: `{self.source}`",
        ]

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "label": self.label,
            "source": self.source,
            "device": self.device,
            "date": self.date,
            "driver": self.driver,
            "runtime": self.runtime,
            "versions": dict(self.versions),
            "commit": self.commit,
            "command": self.command,
            "host": self.host,
            "note": self.note,
        }

    @classmethod
    def of_check(cls, data: Mapping[str, Any], *, source: str, summary: str = "") -> Provenance:
        """From a check.json's own fields, with commit and command from ``provenance`` or SUMMARY.md text."""
        device = data.get("device") or {}
        host = data.get("host") or {}
        prov = data.get("provenance") or {}
        commit = prov.get("commit") or _first(r"commit\s+`?([0-9a-f]{7,40})\b", summary)
        command = prov.get("command") or _first(r"(python3? -m gpu check[^`\n#]*)", summary)
        cores = f", {host['logical_cores']} logical cores" if host.get("logical_cores") else ""
        return cls(
            kind="recorded",
            source=source,
            device=str(device.get("name") or "unknown device"),
            date=data.get("started_at"),
            driver=device.get("driver_version"),
            runtime=device.get("runtime_version"),
            versions=dict(data.get("versions") or {}),
            commit=commit,
            command=command.strip() if command else None,
            host=f"{host['cpu']}{cores}" if host.get("cpu") else None,
        )


def _first(pattern: str, text: str) -> str | None:
    match = re.search(pattern, text or "")
    return match.group(1) if match else None


# --- the article's published figures ---------------------------------------------------------


@dataclass(frozen=True)
class PublishedFigures:
    """The article's printed result on a T4 (seconds): mean of 3 wall-clock runs, N = 10^7."""

    n: int = 10_000_000
    threads_per_block: int = 256
    cpu_time_s: float = 4.033822
    gpu_time_s: float = 0.047736  # "GPU implementation": copies of a, b and c in, kernel, c out
    speedup: float = 84.50
    lines: tuple[str, ...] = (
        "Results match: True",
        "CPU implementation: 4.033822 seconds",
        "GPU implementation: 0.047736 seconds",
        "GPU speedup: 84.50x",
    )
    provenance: Provenance = field(
        default_factory=lambda: Provenance(
            kind="published",
            source=ARTICLE_TEXT,
            device="NVIDIA T4 (Google Colab)",
            date=None,
            note="Printed as the article's expected output: the mean of three wall-clock runs of the Python loop and "
                 "of "
            "gpu_add (copies of a, b and c in, the kernel, c out), N = 10,000,000 float32, 256 threads per block.",
        )
    )

    key = "article-t4"

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "threads_per_block": self.threads_per_block,
            "cpu_time_s": self.cpu_time_s,
            "gpu_time_s": self.gpu_time_s,
            "speedup": self.speedup,
            "lines": list(self.lines),
            "provenance": self.provenance.to_dict(),
        }


ARTICLE = PublishedFigures()


# --- one recorded run -------------------------------------------------------------------------


@dataclass(frozen=True)
class ReferenceRun:
    """One committed check file: its provenance and its sections, rebuilt on demand."""

    key: str  # the folder under benchmarks/, e.g. "h200-final"
    provenance: Provenance
    data: Mapping[str, Any]

    @classmethod
    def from_check(cls, key: str, data: Mapping[str, Any], provenance: Provenance) -> ReferenceRun:
        return cls(key, provenance, data)

    @property
    def sections(self) -> Mapping[str, Any]:
        return self.data.get("sections") or {}

    @property
    def caveat(self) -> str | None:
        """What every surface showing this run must say beside its figures (None: current rules)."""
        from gpu.core.provenance import caveat_for

        return caveat_for(self.data)

    @property
    def l2_note(self) -> str | None:
        """Where this run's L2 size came from when the run did not record it."""
        sweep = self.part("scaling", "run") or {}
        l2_bytes = recorded_l2_bytes(sweep)
        if sweep.get("l2_bytes") or l2_bytes is None:
            return None
        return (f"L2-resident points are marked using the {l2_bytes // 2**20} MiB L2 an "
                f"{self.provenance.device} reports (this run did not record its L2 size)")

    @property
    def hardware(self) -> bool:
        """A run on real hardware at full sizes (not quick, not simulated), finished or not."""
        return self.data.get("backend") == "cuda" and not self.data.get("quick")

    @property
    def finished(self) -> bool:
        """The check got to its end (files written before ``finished`` existed did)."""
        return self.data.get("finished", True) is not False

    @property
    def full(self) -> bool:
        """A full run on real hardware that got to its end. A check cut by its time limit
        (``finished: false``; benchmarks/h200-2026-12-04) is marked as cut short where runs are listed,
        and its finished sections are quoted like any other's (``References.best``)."""
        return self.hardware and self.finished

    @property
    def started_at(self) -> str:
        return str(self.data.get("started_at") or "")

    @property
    def title(self) -> str:
        return f"{self.provenance.device}, {self.provenance.when} ({self.key})"

    def part(self, section: str, *keys: str) -> Mapping[str, Any] | None:
        """The mapping at ``sections[section][keys...]``, None where the run holds none. Each
        result type reads its own part: ``SweepRun.recorded(ref)`` is
        ``SweepRun.from_dict(ref.part("scaling", "run"))`` (gpu/experiments/<name>/)."""
        node: Any = self.sections.get(section)
        for key in keys:
            if not isinstance(node, Mapping):
                return None
            node = node.get(key)
        return node if isinstance(node, Mapping) else None

    def read(self, result_type: Any, section: str, *keys: str) -> Any:
        """``result_type.from_dict`` of the part at ``sections[section][keys...]``, None where the run holds none."""
        d = self.part(section, *keys)
        return result_type.from_dict(d) if d else None

    def article(self) -> Mapping[str, Any] | None:
        return self.part("article", "article")

    def inspector(self) -> Mapping[str, Any] | None:
        return self.part("launch", "inspector")

    def has(self, experiment: str) -> bool:
        """Whether this run holds a run of ``experiment``: its key or its ``Recorded`` name
        ("vector-add", "launch"...), i.e. whether a section it declares holds a record."""
        keys = {e.key for e in experiments() if experiment in (e.key, e.recorded.name if e.recorded else None)}
        return not keys.isdisjoint(self.held)

    @cached_property
    def held(self) -> frozenset[str]:
        """The keys of the experiments whose runs this check holds (worked out once: every page asks, every run)."""
        from gpu.service.check_schema import section_records

        return frozenset(key for key, _record in section_records(self.data))

    def rebuild_all(self) -> None:
        """Rebuild every section present (raises if one cannot be): what each experiment's
        page draws (its ``Recorded.read``), and each run of a generically read section through
        its experiment's ``result_type.from_dict`` where the result type offers one."""
        for experiment in experiments():
            if experiment.recorded is not None and experiment.recorded.read is not None:
                experiment.recorded.read(self)
        from gpu.service.check_schema import declared_sections, section_records

        generic = {s.key for s in declared_sections().values() if s is not None and not s.parts}
        declared = {e.key: e for e in experiments()}
        for section_key in generic & set(self.sections):
            section = self.sections[section_key]
            if not isinstance(section, Mapping) or "error" in section:
                continue
            for key, record in section_records({"sections": {section_key: section}}):
                from_dict = getattr(declared[key].result_type, "from_dict", None)
                if from_dict is not None:
                    from_dict(record)

    def history_records(self) -> list[dict]:
        """This run's results as History-shaped records (never saved): for the Compare-GPUs view."""
        from gpu.service.check_schema import history_records

        return history_records(self.data, source=self.provenance.source, sha256="")


# --- loading -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class References:
    """Every committed reference run (newest first) and any file that could not be read."""

    runs: tuple[ReferenceRun, ...]
    problems: tuple[str, ...] = ()
    article: PublishedFigures = ARTICLE

    def best(self, experiment: str) -> ReferenceRun | None:
        """The run whose section of ``experiment`` a page quotes, section by section.

        The newest hardware run (not quick) holding a finished section of ``experiment`` measured
        under today's rules (no caveat) — a run cut short counts for the sections it finished, since
        ``gpu check`` writes a section only once it is done and holds none of those it never reached.
        Failing that, the newest finished hardware run holding it, measured under older rules: every
        surface quoting it shows its ``caveat``. None when no committed run holds the experiment.
        """
        holding = [r for r in self.runs if r.hardware and r.has(experiment)]
        current = next((r for r in holding if r.caveat is None), None)
        return current or next((r for r in holding if r.finished), None)

    def get(self, key: str) -> ReferenceRun | None:
        return next((r for r in self.runs if r.key == key), None)


def load_reference(path: Path, root: Path = ROOT) -> ReferenceRun:
    """One check.json (validated by the check-file schema, then rebuilt). Raises ImportProblem or OSError."""
    from gpu.service.check_schema import parse_check_bytes

    data = parse_check_bytes(path.read_bytes(), max_bytes=64 * 2**20)  # committed files: trusted size, same schema
    summary_path = path.with_name("SUMMARY.md")
    summary = summary_path.read_text(encoding="utf-8", errors="replace") if summary_path.exists() else ""
    try:
        source = str(path.relative_to(root))
    except ValueError:
        source = str(path)
    run = ReferenceRun(path.parent.name, Provenance.of_check(data, source=source, summary=summary), data)
    run.rebuild_all()  # a committed run the pages could not draw is refused here, as an upload is
    return run


@lru_cache(maxsize=4)
def load_references(folder: str | None = None) -> References:
    """Every ``benchmarks/*/check.json``, newest first; unreadable ones listed in ``problems``.

    Cached per process: the files are part of the checkout and do not change while it runs.
    """
    base = Path(folder) if folder else BENCHMARKS_DIR
    runs, problems = [], []
    for path in sorted(base.glob("*/check.json")):
        try:
            runs.append(load_reference(path))
        except Exception as exc:  # a broken committed file must not break a page
            problems.append(f"{path.parent.name}/check.json: {exc}")
    runs.sort(key=lambda r: r.started_at, reverse=True)
    return References(tuple(runs), tuple(problems))


__all__ = [
    "ARTICLE",
    "PUBLISHED_LABEL",
    "RECORDED_LABEL",
    "Provenance",
    "PublishedFigures",
    "ReferenceRun",
    "References",
    "load_reference",
    "load_references",
    "readable_time",
]
