"""An experiment, declared once.

Each experiment module states one ``Experiment``: its key, title, parameters, how to
run it, how much work a run is (for admission), what History records about it, and
its ``gpu check`` section. Everything else is derived from that declaration by code
that knows nothing about any one experiment:

- the CLI subcommand, its flags and ``--help``      (gpu/cli.py)
- the page's form widgets and their keys           (ui/forms.py)
- admission before any lock is taken               (gpu/service/admission.py: ``admit``)
- the History row: parameters and headline measures (ui/runner.py, gpu/service/store.py)
- downloads                                         (ui/downloads.py)
- the ``gpu check`` section                          (gpu/report/check.py)

A parameter is parsed the same way from a CLI string, a widget value or a saved
History row, so "1e3" means 1000 everywhere and a bad value gets the same message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from gpu.core.limits import InputError

Params = Mapping[str, Any]


def _ignore(*_args: Any) -> None:
    return None


def _never() -> bool:
    return False


@dataclass(frozen=True)
class Progress:
    """How a running experiment reports to whoever runs it, and learns it should stop.

    ``progress("message")`` says what is being measured now (a status line, a stderr
    line). ``step(fraction, partial)`` reports the share done and the result so far, so a
    stopped run keeps what it measured. ``should_stop()`` is asked between steps. The
    CLI, the pages and the cluster workers each build one; the defaults do nothing.
    """

    say: Callable[[str], None] = _ignore
    step: Callable[[float, Any], None] = _ignore
    should_stop: Callable[[], bool] = _never

    def __call__(self, message: str) -> None:
        self.say(message)

    @classmethod
    def of(cls, progress: "Progress | Callable[[str], None] | None") -> "Progress":
        """A Progress from a Progress, a plain ``say(message)`` callable, or None."""
        if isinstance(progress, Progress):
            return progress
        return cls(say=progress) if progress is not None else cls()

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

    ``run(params, progress)`` measures and returns a frozen result with ``to_dict()``
    (JSON-ready, samples in seconds) and ``to_frame()`` (tidy samples); ``params`` are
    already parsed. ``work(params)`` is the run's size in element-passes, compared with
    the admission budget before the run queues; it also refuses (InputError) combinations
    of parameters that cannot run, so those never take the device lock. ``measures(result)`` gives History the
    few headline numbers of a run (seconds, GB/s...). ``passed(result)`` says whether the
    results agreed (the CLI's exit status 1 when not).
    """

    key: str
    title: str
    summary: str
    params: tuple[Param, ...]
    run: Callable[[Params, Progress], Any]
    work: Callable[[Params], int]
    measures: Callable[[Any], dict[str, float]]
    passed: Callable[[Any], bool] = lambda result: bool(getattr(result, "agree", True))
    page: str | None = None  # the page file that shows it, e.g. "pages/1_Vector_add.py"
    uses_cpu: bool = True  # also holds the CPU lock (it times CPU baselines)
    legacy_keys: Mapping[str, str] = field(default_factory=dict)  # param name -> widget key kept for bookmarks
    csv: bool = False  # the result has to_csv(): the CLI offers --csv
    # For runs that can be stopped between steps: mark a partial result as stopped (reason).
    mark_stopped: Callable[[Any, str], Any] | None = None
    # The run's steps in order, each (start of its progress message, estimated seconds),
    # given the parameters and whether kernels are simulated: a progress bar with time left.
    plan: Callable[[Params, bool], list[tuple[str, float]]] | None = None

    def __post_init__(self) -> None:
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise ValueError(f"experiment {self.key!r} declares a parameter twice: {names}")

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
            raise InputError(f"{self.title}: unknown parameter {unknown[0]!r}; known: {', '.join(p.name for p in self.params)}")
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
