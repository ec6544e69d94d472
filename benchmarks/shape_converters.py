"""Which typed converter reads a check file into the result dataclasses: msgspec, pydantic or cattrs.

A check file's bulk is timings: ``Stats`` (gpu/core/timing.py, a frozen dataclass) under points of
a sweep. This builds one such payload of about 4 MiB of JSON (the import's limit), then times each
library converting the parsed dict into ``list[Point]`` (Point: a frozen dataclass holding a Stats),
best of 5, and prints the error each one gives for one bad sample deep inside.

    .venv/bin/python benchmarks/shape_converters.py            # the libraries installed here
    pip install --target /tmp/shapebench msgspec pydantic cattrs
    PYTHONPATH=/tmp/shapebench .venv/bin/python benchmarks/shape_converters.py   # all three

Figures and the choice: benchmarks/shape_converters.md.
"""

from __future__ import annotations

import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu.core.timing import Stats


@dataclass(frozen=True)
class Point:
    n: int
    series: str
    stats: Stats | None


def payload(target_bytes: int = 4 * 2**20) -> tuple[list[dict], int]:
    rng = random.Random(0)
    points: list[dict] = []
    size = 0
    while size < target_bytes:
        stats = Stats(tuple(rng.uniform(1e-6, 1e-3) for _ in range(50)))
        row = {"n": 2 ** rng.randint(10, 28), "series": "kernel", "stats": stats.to_dict()}
        size += len(json.dumps(row))
        points.append(row)
    return points, size


def converters():
    out = {}
    try:
        import msgspec

        out["msgspec"] = (lambda d: msgspec.convert(d, list[Point]), msgspec.ValidationError)
    except ImportError:
        pass
    try:
        import pydantic

        adapter = pydantic.TypeAdapter(list[Point])
        out["pydantic"] = (adapter.validate_python, pydantic.ValidationError)
    except ImportError:
        pass
    try:
        import cattrs

        conv = cattrs.Converter(detailed_validation=True)

        def structure(d):
            try:
                return conv.structure(d, list[Point])
            except Exception as exc:
                raise ValueError("; ".join(cattrs.transform_error(exc))) from None

        out["cattrs"] = (structure, ValueError)
    except ImportError:
        pass
    return out


def main() -> None:
    points, size = payload()
    print(f"payload: {len(points):,} points, {size / 2**20:.2f} MiB of JSON, Python {sys.version.split()[0]}")
    bad = json.loads(json.dumps(points[:3]))
    bad[2]["stats"]["samples_s"][3] = "fast"
    text = json.loads(json.dumps(points[:3]))
    text[2]["stats"]["samples_s"][3] = "0.5"  # a number written as text: an untrusted file must not pass it
    for name, (convert, error) in converters().items():
        result = convert(points)
        assert result[0].stats == Stats(tuple(points[0]["stats"]["samples_s"])), name
        best = min(_timed(convert, points) for _ in range(5))
        try:
            convert(bad)
            message = "(accepted the bad value!)"
        except error as exc:
            message = " ".join(str(exc).split())
        try:
            convert(text)
            lax = "accepted by default"
        except error:
            lax = "refused"
        print(f"{name:9s} {best * 1e3:8.1f} ms   '0.5' as a sample: {lax:19s}  bad sample -> {message[:110]}")


def _timed(convert, points) -> float:
    start = time.perf_counter()
    convert(points)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
