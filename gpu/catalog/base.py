"""An experiment, declared once.

Each experiment module states one ``Experiment``: its key, title, parameters, how to
run it, how much work a run is (for admission), what History records about it, and
its ``gpu check`` section. Everything else is derived from that declaration by code
that knows nothing about any one experiment:

- the CLI subcommand, its flags and ``--help``      (gpu/__main__.py)
- the page's form widgets and their keys           (ui/forms.py)
- admission before any lock is taken               (gpu/service/admission.py: ``admit``)
- the History row: parameters, headline measures   (ui/run_record.py, gpu/service/store.py)
  and the History table's columns                  (ui/charts/history.py: ``runs_frame``)
- the sidebar link and the Home entry of its page  (ui/navigation.py)
- downloads                                         (ui/downloads.py)
- prose for the CLI and the JSON downloads         (gpu/catalog/render.py, from its folder's ``report``)
- the ``gpu check`` sections                         (gpu/report/check.py, via ``check``)
  and how a check file is read back: its section     (gpu/service/check_schema.py, references.py)
  keys, validators and History records
- where History finds a saved run's samples        (ui/charts/history.py, via ``samples``)
- the "On a real GPU" panel                         (ui/reference.py, via ``recorded``)
- the CLI's and the pages' order                   (gpu/catalog/registry.py, via ``order``)

Code in a layer above the engine (a folder's prose and ``gpu check`` section, its page's view) is never
named by the declaration: the layers above import the experiments, never the reverse. Each such module
registers itself, or is found, by its folder (``registry.faces``; ``checking.runs_section``), and the
pages name their views.

A parameter is parsed the same way from a CLI string, a widget value or a saved
History row, so "1e3" means 1000 everywhere and a bad value gets the same message.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from gpu.catalog.checking import SectionRun
from gpu.core.limits import InputError
from gpu.core.series import Series

Params = Mapping[str, Any]


def _ignore(*_args: Any) -> None:
    return None


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Progress:
    """How a running experiment reports to whoever runs it, and learns it should stop.

    ``progress("message")`` says what is being measured now (a status line, a stderr
    line). ``begin(step_id, message)`` does too, and names the step of the declaration's
    ``plan`` that starts (``started(step_id)``: the page's progress bar moves by id, so
    rewording a message cannot break it). ``step(fraction, partial)`` reports the share
    done and the result so far, so a stopped run keeps what it measured.
    ``should_stop()`` is asked between steps. ``partial(result)`` hands a frozen result of
    what has been measured so far, for a view to draw while the rest runs (it is never
    saved: the run's return value is). The CLI, the pages and the cluster workers each
    build one; the defaults do nothing.
    """

    say: Callable[[str], None] = _ignore
    step: Callable[[float, Any], None] = _ignore
    should_stop: Callable[[], bool] = _never
    started: Callable[[str], None] = _ignore
    partial: Callable[[Any], None] = _ignore

    def __call__(self, message: str) -> None:
        self.say(message)

    def begin(self, step_id: str, message: str) -> None:
        self.started(step_id)
        self.say(message)

    @classmethod
    def of(cls, progress: Progress | Callable[[str], None] | None) -> Progress:
        """A Progress from a Progress, a plain ``say(message)`` callable, or None."""
        if isinstance(progress, Progress):
            return progress
        return cls(say=progress) if progress is not None else cls()



# --- what a run returns ------------------------------------------------------------------


@runtime_checkable
class ExperimentResult(Protocol):
    """What every experiment's ``run`` returns; the framework calls these and nothing else.

    ``agree``: whether the results were checked and agreed (the CLI exits 1 and History
    marks the run when not). ``to_dict()``: JSON-ready, samples in seconds (History, the
    JSON download, ``--json``). ``to_frame()``: a tidy table of what was measured (charts
    and the CSV download). The headline numbers History keeps come from the declaration's
    ``measures(result)``, a ``{name: float}``; where a saved ``to_dict()`` keeps its timing
    samples, from its ``samples(saved)``, a ``{series label: [seconds]}`` (both checked:
    ``checked_measures``, ``checked_samples``).
    """

    @property
    def agree(self) -> bool: ...

    def to_dict(self) -> dict: ...

    def to_frame(self) -> Any: ...


RESULT_MEMBERS = ("agree", "to_dict", "to_frame")


def result_problem(result_type: type) -> str | None:
    """What ``result_type`` lacks of ``ExperimentResult``, or None when it has it all."""
    missing = [name for name in RESULT_MEMBERS if not hasattr(result_type, name)
               and name not in getattr(result_type, "__dataclass_fields__", {})]
    return (
        f"{result_type.__name__} lacks {', '.join(missing)} (an experiment's result needs {', '.join(RESULT_MEMBERS)})"
        if missing
        else None
    )


def checked_result(experiment: Experiment, result: Any) -> Any:
    """``result`` if it keeps the result protocol and the declaration's type; TypeError saying what is wrong
    otherwise."""
    if experiment.result_type is not None and not isinstance(result, experiment.result_type):
        raise TypeError(
            f"experiment {experiment.key!r} returned a {type(result).__name__}; its declaration says "
            f"{experiment.result_type.__name__}"
        )
    if not isinstance(result, ExperimentResult):
        raise TypeError(f"experiment {experiment.key!r}: {result_problem(type(result))}")
    if not isinstance(result.agree, bool):
        raise TypeError(
            f"experiment {experiment.key!r}: {type(result).__name__}.agree is a {type(result.agree).__name__}, not a "
            "bool"
        )
    return result


def checked_samples(experiment: Experiment, found: Any) -> dict[str, list[float]]:
    """What ``experiment.samples(saved)`` returned, checked: ``{label: [finite seconds ≥ 0]}``; TypeError saying what
    is wrong."""
    if not isinstance(found, Mapping):
        raise TypeError(
            f"experiment {experiment.key!r}: samples(saved) must be a {{label: [seconds]}} mapping, got "
            f"{type(found).__name__}"
        )
    out: dict[str, list[float]] = {}
    for label, values in found.items():
        ok = isinstance(label, str) and isinstance(values, (list, tuple)) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in values)
        if not ok:
            raise TypeError(
                f"experiment {experiment.key!r}: samples(saved)[{label!r}] must be a list of finite seconds ≥ 0, got "
                f"{values!r:.80}"
            )
        out[label] = [float(v) for v in values]
    return out


def checked_measures(experiment: Experiment, result: Any) -> dict[str, float]:
    """``experiment.measures(result)``, checked: a ``{name: number}`` mapping; TypeError otherwise."""
    measures = experiment.measures(result)
    if not isinstance(measures, Mapping) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) for k, v in measures.items()
    ):
        raise TypeError(
            f"experiment {experiment.key!r}: measures(result) must be a {{name: number}} mapping, got {measures!r}"
        )
    return {k: float(v) for k, v in measures.items()}


# --- what a declaration names -------------------------------------------------------------


@dataclass(frozen=True)
class PageLink:
    """A page's entry in the sidebar and on Home: its label, Material icon and place.

    ``script`` is the page file relative to the app's folder ("pages/1_Vector_add.py").
    An experiment's declaration gives its page's link; a page that shows no experiment
    (Home, History, Device...) states ``PAGE = PageLink(...)`` at the top of its own file
    with plain literals, and ``ui/navigation.py`` finds it there (``script`` then defaults
    to that file). ``order`` sorts the sidebar; ``blurb`` is its line on the Home page.
    ``teacher``: listed only for a class's teacher (``ui/learner.py: teacher()``), nowhere else.
    """

    label: str
    icon: str
    order: int
    blurb: str = ""
    script: str = ""
    teacher: bool = False

    def __post_init__(self) -> None:
        if not self.icon.startswith(":material/"):
            raise ValueError(
                f"page {self.label!r}: icon must be a Material icon such as ':material/science:', got {self.icon!r}"
            )


@dataclass(frozen=True)
class Part:
    """One result a check section holds: the value at ``section[keys...]``, of result type ``type``.

    Reading a check file converts it into ``type`` (gpu/core/shape.py): its annotations are the
    validator of the untrusted file. ``record``: the result is a History row (the article's
    printout and the correctness launches are not). ``required``: a section without it is refused.
    """

    keys: tuple[str, ...]
    type: type
    record: bool = True
    required: bool = False


@dataclass(frozen=True)
class CheckSection:
    """One ``gpu check`` section of an experiment, and how a recorded check file reads it back.

    ``key`` is the section's key under ``sections`` in check.json (the ``Section.key`` that its
    function returns). The function, ``(CheckContext) -> Section``, is ``run`` where the declaration can
    name it (the catalog's kernels: ``gpu.catalog.declare.catalog_section``); else the one the folder's
    ``check.py`` registers under ``key`` (``@runs_section(key)``, gpu/catalog/checking.py: it imports the
    engine, which therefore cannot import it); or, with ``at_defaults``, one run of the experiment at its
    defaults (gpu/report/declared_check.py), for an experiment with no section of its own.
    A check file is untrusted input (gpu/service/check_schema.py): every section's values are
    bounded (numbers finite, text and lists within limits, every ``*_s`` ≥ 0), then read back through:

    - ``parts``: the results the section holds and their types, each converted into its type
      (the first bad field named); none declared: the section is read generically, its
      ``run`` mapping and each mapping of its ``runs`` list rebuilt through
      ``result_type.from_dict`` when the result type offers one.
    - ``records``: ``(section: dict, sections: dict) -> [result dict]``, the History rows
      the section holds (``sections``: the whole file's, for a section that folds another
      in); None: its parts marked ``record`` (no parts: its ``run`` and ``runs``).

    A record without its own ``experiment`` is filed under the declaring experiment.
    """

    key: str
    run: SectionRun | None = None
    parts: tuple[Part, ...] = ()
    records: Callable[[Mapping[str, Any], Mapping[str, Any]], list[Mapping[str, Any]]] | None = None
    at_defaults: bool = False

    def __post_init__(self) -> None:
        if not self.key or not all(c.isalnum() or c in "-_" for c in self.key):
            raise ValueError(f"a check section's key is letters, digits, '-' and '_', got {self.key!r}")
        if self.run is not None and self.at_defaults:
            raise ValueError(f"check section {self.key!r}: a run of its own, or one at the defaults, not both")


@dataclass(frozen=True)
class Recorded:
    """Where a run recorded on a real GPU shows for an experiment's page ("On a real GPU").

    ``name`` is what the committed ``gpu check`` runs hold it under (``References.best``)
    and what the page asks for. A new experiment has its slot before any GPU has recorded it:
    the panel then says so. ``read(reference_run)`` (a function of the experiment's engine, passed
    itself) rebuilds every result the page's drawing will need from the run (each type's
    ``recorded``/``from_dict``), raising if one cannot be: a committed run that a page could not
    draw is refused when it is loaded, not when the page draws it. The drawing itself is the UI's:
    the page hands its view's ``recorded(ref)`` to ``ui.reference.panel_after_run`` (the engine
    never names a module of ui/).
    """

    name: str
    read: Callable[[Any], Any] | None = None


WIDGETS = ("text", "int", "float", "select", "multiselect", "checkbox")


@dataclass(frozen=True)
class PerBackend:
    """A default that differs between a real GPU and the simulator (about 0.1 ms per thread)."""

    hardware: Any
    simulator: Any

    def pick(self, simulated: bool) -> Any:
        return self.simulator if simulated else self.hardware


@dataclass(frozen=True)
class Param:
    """One input of an experiment.

    ``parse(value)`` turns a CLI string, widget value or stored value into the typed
    value, raising ``InputError`` that says what is allowed. ``default`` is a value, a
    ``PerBackend``, or a zero-argument callable (for limits read at run time).
    ``widget`` picks the page control; ``options`` (with ``option_label``) feed select
    and multiselect widgets and the CLI's help. ``page``/``cli`` hide a parameter from
    one surface (e.g. the CLI's ``--json`` lives elsewhere; a page may fix a value).
    """

    name: str
    label: str
    parse: Callable[[Any], Any]
    default: Any
    help: str
    widget: str = "text"
    options: Sequence[Any] = ()
    option_label: Callable[[Any], str] = str
    flag: str | None = None
    page: bool = True
    cli: bool = True

    def __post_init__(self) -> None:
        if self.widget not in WIDGETS:
            raise ValueError(f"parameter {self.name!r}: widget must be one of {WIDGETS}, got {self.widget!r}")
        if not self.name.isidentifier():
            raise ValueError(f"parameter name must be a Python identifier, got {self.name!r}")

    def default_for(self, simulated: bool) -> Any:
        value = self.default
        if isinstance(value, PerBackend):
            value = value.pick(simulated)
        return value() if callable(value) else value

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Experiment:
    """Everything the lab needs to know about one experiment.

    ``run(params, progress)`` measures and returns a frozen ``ExperimentResult`` of type
    ``result_type``; ``params`` are already parsed. Callers use ``execute``, which checks
    what ``run`` returned. ``work(params)`` is the run's size in element-passes, compared
    with the admission budget before the run queues; it also refuses (InputError)
    combinations of parameters that cannot run, so those never take the device lock.
    ``measures(result)`` gives History the few headline numbers of a run (seconds,
    GB/s...). ``passed(result)`` says whether the run passed (the CLI's exit status 1 when
    not): by default, whether its results agreed.

    What the rest of the lab derives, each optional: ``page`` (sidebar link and Home
    entry), ``order`` (the CLI's and lists' order), ``history_columns`` (parameters with
    a History column of their own), ``series`` (measured series this experiment adds to
    ``gpu.core.series``), ``check`` (its ``gpu check`` sections, in order, as
    ``CheckSection``s), ``recorded`` (its "On a real GPU" panel) and ``samples`` (where a
    saved run keeps its timing samples, for History's compare chart). The CLI's text and the
    JSON's prose come from its folder's ``report`` module, found by the folder
    (``registry.faces``): ``SUMMARIES`` and ``PROSE``, ``{result type: function}``.
    """

    key: str
    title: str
    summary: str
    params: tuple[Param, ...]
    run: Callable[[Params, Progress], Any]
    work: Callable[[Params], int]
    measures: Callable[[Any], dict[str, float]]
    result_type: type | None = None
    passed: Callable[[Any], bool] = lambda result: result.agree
    page: PageLink | None = None
    order: int = 1000
    history_columns: tuple[str, ...] = ()
    series: tuple[Series, ...] = ()
    check: tuple[CheckSection, ...] = ()
    recorded: Recorded | None = None
    uses_cpu: bool = True  # also holds the CPU lock (it times CPU baselines)
    legacy_keys: Mapping[str, str] = field(default_factory=dict)  # param name -> widget key kept for bookmarks
    csv: bool = False  # the result has to_csv(): the CLI offers --csv
    # For runs that can be stopped between steps: mark a partial result as stopped (reason).
    mark_stopped: Callable[[Any, str], Any] | None = None
    # The run's steps in order, each (its step id, estimated seconds), given the parameters
    # and whether kernels are simulated: a progress bar with time left. The run reports a
    # step by ``progress.begin(step_id, message)``.
    plan: Callable[[Params, bool], list[tuple[str, float]]] | None = None
    # Seconds a run should take at these parameters, for runs without a plan: the form states it
    # before the run starts. With a plan, the plan's sum is the estimate.
    estimate: Callable[[Params, bool], float] | None = None
    # Where a saved run (its to_dict(), as History and imported checks keep it) holds its
    # timing samples: ``samples(saved) -> {series label: [seconds]}``. None: every mapping
    # with a ``samples_s`` list, named by its path (what rows saved before hooks hold).
    samples: Callable[[Mapping[str, Any]], Mapping[str, Sequence[float]]] | None = None

    def __post_init__(self) -> None:
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise ValueError(f"experiment {self.key!r} declares a parameter twice: {names}")
        unknown = [c for c in self.history_columns if c not in names]
        if unknown:
            raise ValueError(
                f"experiment {self.key!r}: history column {unknown[0]!r} is not one of its parameters {names}"
            )
        if self.result_type is not None and result_problem(self.result_type):
            raise TypeError(f"experiment {self.key!r}: {result_problem(self.result_type)}")
        wrong = [c for c in self.check if not isinstance(c, CheckSection)]
        if wrong:
            raise TypeError(f"experiment {self.key!r}: check holds {wrong[0]!r}; each entry is a CheckSection")
        keys = [s.key for s in self.check_sections()]
        if len(set(keys)) != len(keys):
            raise ValueError(f"experiment {self.key!r} declares check section keys twice: {keys}")

    def check_sections(self) -> tuple[CheckSection, ...]:
        """Its ``gpu check`` sections."""
        return self.check

    def execute(self, params: Params, progress: Progress | Callable[[str], None] | None = None) -> Any:
        """Run with parsed ``params`` and return the result, checked against the result protocol."""
        return checked_result(self, self.run(params, Progress.of(progress)))

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"experiment {self.key!r} has no parameter {name!r}")

    def defaults(self, simulated: bool) -> dict[str, Any]:
        return {p.name: p.default_for(simulated) for p in self.params}

    def parse(self, raw: Params, simulated: bool) -> dict[str, Any]:
        """Typed parameters from raw values (missing ones take their default). Raises InputError."""
        unknown = sorted(set(raw) - {p.name for p in self.params})
        if unknown:
            raise InputError(
                f"{self.title}: unknown parameter {unknown[0]!r}; known: {', '.join(p.name for p in self.params)}"
            )
        parsed: dict[str, Any] = {}
        for p in self.params:
            value = raw.get(p.name)
            if value is None:
                value = p.default_for(simulated)
            parsed[p.name] = None if value is None else p.parse(value)
        return parsed

    def widget_key(self, name: str) -> str:
        """The page widget's session-state key: ``<experiment key>.<param>`` unless kept from before."""
        return self.legacy_keys.get(name, f"{self.key}.{name}")
