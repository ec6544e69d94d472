"""One typed converter between the result dataclasses and their JSON shape (check.json, History, downloads).

A result type's fields and their annotations are its shape: ``to_builtins(obj)`` writes
them (nested result types, tuples as lists), ``from_builtins(data, cls)`` rebuilds the
object and, on an untrusted file, is its validator: every key known, every value of its
annotated type (no number written as text, no true for a number, every float finite),
the first problem reported with the path of the field and what is allowed::

    `sections.breakdown.run.gpu.phases.h2d.samples_s[3]` must be a number, got text

A type whose file shape is not just its fields says how it differs, once, with
``@shaped(...)`` above its ``@dataclass``: values written from its properties for the
reader's convenience (``derived``: ignored when read back), field names the file spells
otherwise (``renames``), and a ``layout`` for anything else (a nesting the file keeps). A result type takes
``Shaped`` as its base for the two methods every caller uses, ``to_dict`` and ``from_dict``.

The converter is cattrs (benchmarks/shape_converters.md says why): it derives the
conversion of an existing dataclass from its annotations and lets a type change only
what differs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

T = TypeVar("T")

MAX_WHOLE = 2**62  # a whole number beyond this is no count, size or clock a check ever records
MAX_TEXT = 200_000  # characters in one string (a PTX listing is ~5,000)
# Written on every result for its reader (gpu/core/provenance.py: which rules it was measured under),
# read by History and the pages from the dict; the object does not hold it.
STAMPS = ("methodology_version",)


class ShapeError(ValueError):
    """Data that is not the shape of its type; the message names the field's path and what is allowed.

    ``what`` says what is wrong ("must be a number, got text"), ``where`` the field's path below
    the value converted ("gpu.phases.kernel.samples_s[3]"; empty: that value itself).
    """

    def __init__(self, what: str, where: str = "") -> None:
        self.what, self.where = what, where
        if not where:
            message = what.removeprefix(": ")
        else:  # "`a.b` must be ...", or "`a.b`: what the type itself said"
            message = f"{_where(where)}{'' if what.startswith(':') else ' '}{what}"
        super().__init__(message)

    def under(self, prefix: str) -> ShapeError:
        """The same problem, its path below ``prefix`` (a value converted inside another's layout)."""
        return ShapeError(self.what, _join(prefix, self.where))


def kind(value: Any) -> str:
    """What a JSON value is, in words (for messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# --- the strict leaves: a file's values are never coerced -------------------------------------


def _whole(value: Any, _type: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ShapeError(f"must be a whole number, got {kind(value)}")
    if not -MAX_WHOLE <= value <= MAX_WHOLE:
        raise ShapeError(f"is a whole number of {len(str(abs(value))):,} digits; at most ±2^62 allowed")
    return value


def _number(value: Any, _type: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ShapeError(f"must be a number, got {kind(value)}")
    if isinstance(value, int) and not -MAX_WHOLE <= value <= MAX_WHOLE:
        raise ShapeError(f"is a number of {len(str(abs(value))):,} digits; at most ±2^62 allowed")
    if not math.isfinite(value):
        raise ShapeError("must be a finite number")
    return float(value)


def _text(value: Any, _type: Any) -> str:
    if not isinstance(value, str):
        raise ShapeError(f"must be text, got {kind(value)}")
    if len(value) > MAX_TEXT:
        raise ShapeError(f"is {len(value):,} characters; at most {MAX_TEXT:,} allowed")
    return value


def _truth(value: Any, _type: Any) -> bool:
    if not isinstance(value, bool):
        raise ShapeError(f"must be true or false, got {kind(value)}")
    return value


def _mapping(value: Any, _type: Any) -> dict:
    """An untyped mapping (telemetry, free-form facts): an object, its values bounded by the file's walk."""
    if not isinstance(value, dict):
        raise ShapeError(f"must be an object, got {kind(value)}")
    return dict(value)


def _converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    converter.register_structure_hook(int, _whole)
    converter.register_structure_hook(float, _number)
    converter.register_structure_hook(str, _text)
    converter.register_structure_hook(bool, _truth)
    converter.register_structure_hook(dict, _mapping)
    converter.register_unstructure_hook(tuple, list)  # JSON has lists
    return converter


CONVERTER = _converter()


# --- a type's file shape ---------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """How a type's file shape differs from its fields (``shaped``)."""

    derived: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    prose: tuple[str, ...] = ()
    renames: Mapping[str, str] = field(default_factory=dict)
    omit: tuple[str, ...] = ()
    to_file: Callable[[Any, dict], dict] | None = None
    from_file: Callable[[dict], dict] | None = None
    paths: Mapping[str, str] = field(default_factory=dict)

    def path_of(self, name: str) -> str:
        """Where field ``name`` sits in the file, relative to the type's object (for messages)."""
        return self.paths.get(name) or self.renames.get(name) or name


SHAPES: dict[type, Shape] = {}  # every shaped type


def shaped(
    *,
    derived: Mapping[str, Callable[[Any], Any]] | None = None,
    prose: tuple[str, ...] = (),
    renames: Mapping[str, str] | None = None,
    omit: tuple[str, ...] = (),
    to_file: Callable[[Any, dict], dict] | None = None,
    from_file: Callable[[dict], dict] | None = None,
    paths: Mapping[str, str] | None = None,
) -> Callable[[type[T]], type[T]]:
    """Class decorator (above ``@dataclass``): register the type's file shape with the converter.

    ``derived``: file key -> function of the object, written after the fields and ignored
    when read (a median the samples give, a label). ``prose``: keys the report layer adds
    to the written dict (gpu/catalog/render.py: an explanation), ignored when read.
    ``renames``: field -> the file's key.
    ``omit``: fields the file does not hold (they take their defaults when read).
    ``to_file(obj, data) -> data`` and ``from_file(data) -> data``: the rest of the layout,
    applied to the written dict and to the read dict before the fields are converted; ``paths``:
    field -> where the layout puts it ("gpu.phases"), so a message names the file's path.
    """
    shape = Shape(dict(derived or {}), prose, dict(renames or {}), omit, to_file, from_file, dict(paths or {}))

    def register(cls: type[T]) -> type[T]:
        _register(cls, shape)
        return cls

    return register


def _register(cls: type, shape: Shape) -> None:
    SHAPES[cls] = shape
    built: dict[str, Callable] = {}  # the generated functions, made on first use (annotations resolve then)

    def overrides() -> dict[str, Any]:
        out: dict[str, Any] = {name: override(rename=key) for name, key in shape.renames.items()}
        out.update({name: override(omit=True) for name in shape.omit})
        return out

    def unstructure(obj: Any) -> dict:
        if "write" not in built:
            built["write"] = make_dict_unstructure_fn(cls, CONVERTER, **overrides())
        data = built["write"](obj)
        for key, value in shape.derived.items():
            data[key] = CONVERTER.unstructure(value(obj))
        return shape.to_file(obj, data) if shape.to_file is not None else data

    def structure(data: Any, _type: Any) -> Any:
        if not isinstance(data, dict):
            raise ShapeError(f"must be an object, got {kind(data)}")
        if "read" not in built:
            built["read"] = make_dict_structure_fn(
                cls, CONVERTER, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True, **overrides()
            )
        try:
            if shape.from_file is not None:
                data = shape.from_file(dict(data))
            ignored = {*shape.derived, *shape.prose, *STAMPS}
            data = {k: v for k, v in data.items() if k not in ignored}
            return built["read"](data, cls)
        except (ClassValidationError, ForbiddenExtraKeysError, ShapeError):
            raise
        except (TypeError, ValueError) as exc:  # the type's own __post_init__ refused the values
            raise ShapeError(f": {exc}") from None

    CONVERTER.register_unstructure_hook(cls, unstructure)
    CONVERTER.register_structure_hook(cls, structure)


def tagged(data: dict, key: str, value: str) -> dict:
    """``data`` without its tag ``key``, which must read ``value`` (a file's "experiment": "vector-add")."""
    if key not in data:
        raise ShapeError(f"lacks {key!r} (expected {value!r})")
    if data[key] != value:
        raise ShapeError(f"has {key!r} {str(data[key])[:60]!r}; expected {value!r}")
    return {k: v for k, v in data.items() if k != key}


# --- the two directions ----------------------------------------------------------------------


def to_builtins(obj: Any) -> Any:
    """The JSON-ready shape of a result (dicts, lists, numbers, text, None)."""
    return CONVERTER.unstructure(obj)


def from_builtins(data: Any, cls: type[T], path: str = "") -> T:
    """Rebuild a ``cls`` from its JSON shape; raises ShapeError naming the first bad field (under ``path``)."""
    try:
        return CONVERTER.structure(data, cls)
    except (ClassValidationError, IterableValidationError, ForbiddenExtraKeysError, ShapeError) as exc:
        raise _first_problem(exc, path) from None


class Shaped:
    """A result type whose file shape is this module's: ``to_dict`` writes it, ``from_dict`` rebuilds and checks it.
    What a type's file holds other than its fields is said by ``@shaped`` (an older file's missing key included, by
    a field's default or ``from_file``), never by a ``from_dict`` of its own."""

    def to_dict(self) -> dict:
        return to_builtins(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], path: str = "") -> Self:
        """The inverse of ``to_dict`` (check.json, History, downloads); raises ShapeError naming the field."""
        return from_builtins(d, cls, path)


def _where(path: str) -> str:
    return f"`{path}`" if path else "the top level"


def _join(path: str, below: str) -> str:
    return f"{path}{below}" if below.startswith("[") else ".".join(p for p in (path, below) if p)


def _first_problem(exc: BaseException, path: str) -> ShapeError:
    """The first leaf of cattrs' error tree: what is wrong, and where ('`a.b[3]` must be ...')."""
    if isinstance(exc, ForbiddenExtraKeysError):
        keys = sorted(exc.extra_fields)
        return ShapeError(f"has unknown key{'s' if len(keys) > 1 else ''} {', '.join(repr(k) for k in keys)}", path)
    if isinstance(exc, ClassValidationError | IterableValidationError):
        shape = SHAPES.get(exc.cl) if isinstance(exc, ClassValidationError) else None
        for inner in exc.exceptions:
            note = _note(inner)
            if note is None:
                return _first_problem(inner, path)
            if isinstance(note, str):
                note = shape.path_of(note) if shape is not None else note
                if isinstance(inner, KeyError):
                    return ShapeError(f"lacks {note!r}", path)
                return _first_problem(inner, _join(path, note))
            return _first_problem(inner, f"{path}[{note}]")
        return ShapeError(f": {exc.message}", path)
    if isinstance(exc, ShapeError):
        return exc.under(path)
    return ShapeError(f": {exc}", path)


def _note(exc: BaseException) -> str | int | None:
    """The field name (or list index) cattrs attached to an inner error, None if none."""
    for note in getattr(exc, "__notes__", ()):
        name = getattr(note, "name", None)
        if name is not None:
            return name
        index = getattr(note, "index", None)
        if index is not None:
            return index
    return None


__all__ = [
    "CONVERTER",
    "MAX_TEXT",
    "MAX_WHOLE",
    "STAMPS",
    "ShapeError",
    "Shaped",
    "from_builtins",
    "kind",
    "shaped",
    "tagged",
    "to_builtins",
]
