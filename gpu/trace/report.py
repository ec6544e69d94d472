"""One traced launch's findings as a frozen, JSON-able result (``TraceReport``).

Built in the process that ran the trace (``analyse``), sent to the app as JSON
(``to_dict`` / ``from_dict``) and printed by the CLI (``str``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from gpu.sim.rewrite import WARP_SYNC
from gpu.trace import analysis as an
from gpu.trace.record import RawTrace


@dataclass(frozen=True)
class TraceReport:
    """What the trace of one launch found. Counts are of recorded accesses; ``notes`` say what was left out."""

    kernel: str
    label: str  # e.g. "transpose-naive, N = 32"
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    blocks_traced: int
    blocks_total: int
    accesses: int
    accesses_dropped: int
    races: tuple[an.Race, ...]
    out_of_bounds: tuple[an.OutOfBoundsAccess, ...]
    out_of_bounds_count: int
    divergence: tuple[an.Divergence, ...]
    barrier_intervals: int
    sectors: tuple[an.SiteSectors, ...]
    banks: tuple[an.SiteBanks, ...]
    picture: tuple[dict, ...] | None
    error: str | None = None
    notes: tuple[str, ...] = field(default=())
    source: str = ""  # the file whose line numbers the findings give
    collectives: tuple[tuple[str, int], ...] = ()  # (CUDA name, releases) of each warp collective, e.g. shfl_down_sync

    def collectives_text(self) -> str:
        """``40 shfl_down_sync, 8 syncwarp`` (releases of each warp collective, one per warp or mask), or ""."""
        return ", ".join(f"{count:,} {name}" for name, count in self.collectives)

    @property
    def problems(self) -> bool:
        """A race, an out-of-bounds access, barrier divergence or an error: the CLI exits 1."""
        return bool(self.races or self.out_of_bounds or self.divergence or self.error)

    @property
    def threads_per_block(self) -> int:
        return int(self.block[0] * self.block[1] * self.block[2])

    def headline(self) -> str:
        """One sentence: clean, or how many findings of each kind."""
        parts = []
        if self.races:
            parts.append(f"{len(self.races)} race{'s' if len(self.races) > 1 else ''}")
        if self.out_of_bounds:
            parts.append(
                f"{self.out_of_bounds_count:,} out-of-bounds access{'es' if self.out_of_bounds_count > 1 else ''}"
            )
        if self.divergence:
            parts.append(f"barrier divergence in {len(self.divergence)} block{'s' if len(self.divergence) > 1 else ''}")
        if self.error:
            parts.append("an error")
        if not parts:
            return "No race, no out-of-bounds access, no barrier divergence."
        return "Found " + ", ".join(parts) + "."

    def __str__(self) -> str:
        lines = [
            f"trace of {self.label}: {self.blocks_traced:,} of {self.blocks_total:,} blocks of "
            f"{self.threads_per_block:,} threads, "
            f"{self.accesses:,} accesses recorded" + (f"; lines of {self.source}" if self.source else ""),
            self.headline(),
        ]
        if self.error:
            lines.append(f"error: {self.error}")
        lines += [f"  {r}" for r in self.races]
        lines += [f"  {o}" for o in self.out_of_bounds]
        lines += [f"  {d}" for d in self.divergence]
        lines.append(f"barrier intervals per block: {self.barrier_intervals}")
        if self.collectives:
            lines.append(f"warp collectives released (one per warp or mask; not memory accesses): "
                         f"{self.collectives_text()}")
        if self.sectors:
            lines.append("global memory, 32-byte sectors per warp request (ideal = the bytes asked for, packed):")
            for s in self.sectors:
                lines.append(
                    f"  line {s.line:>4} {s.kind:<6} `{s.text}`: {s.sectors_per_request:.1f} sectors/request "
                    f"(ideal {s.ideal_sectors_per_request:.1f}, max {s.max_sectors}) over {s.requests:,} requests"
                )
        if self.banks:
            lines.append("shared memory, bank-conflict ways per warp request (1 = none):")
            for b in self.banks:
                lines.append(
                    f"  line {b.line:>4} {b.kind:<6} `{b.text}`: {b.ways:.1f}-way (max {b.max_ways}) over "
                    f"{b.requests:,} requests"
                )
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["problems"] = self.problems
        data["headline"] = self.headline()
        return data

    @classmethod
    def from_dict(cls, data: dict) -> TraceReport:
        return cls(
            kernel=data["kernel"], label=data["label"], grid=tuple(data["grid"]), block=tuple(data["block"]),
            blocks_traced=data["blocks_traced"], blocks_total=data["blocks_total"], accesses=data["accesses"],
            accesses_dropped=data["accesses_dropped"],
            races=tuple(_race(r) for r in data["races"]),
            out_of_bounds=tuple(_oob(o) for o in data["out_of_bounds"]),
            out_of_bounds_count=data["out_of_bounds_count"],
            divergence=tuple(an.from_dict(an.Divergence, d) for d in data["divergence"]),
            barrier_intervals=data["barrier_intervals"],
            sectors=tuple(an.from_dict(an.SiteSectors, s) for s in data["sectors"]),
            banks=tuple(an.from_dict(an.SiteBanks, b) for b in data["banks"]),
            picture=None if data["picture"] is None else tuple(data["picture"]),
            error=data.get("error"), notes=tuple(data.get("notes", ())), source=data.get("source", ""),
            collectives=tuple((str(name), int(count)) for name, count in data.get("collectives", ())),
        )


def _who(d: dict) -> an.Who:
    return an.Who(tuple(d["block"]), tuple(d["thread"]), d["line"], d["text"], d["kind"])


def _race(d: dict) -> an.Race:
    return an.Race(
        d["array"], d["space"], d["scope"], tuple(d["index"]), _who(d["first"]), _who(d["second"]), d["addresses"]
    )


def _oob(d: dict) -> an.OutOfBoundsAccess:
    return an.OutOfBoundsAccess(d["array"], tuple(d["shape"]), tuple(d["index"]), _who(d["who"]))


def analyse(raw: RawTrace, label: str | None = None, notes: tuple[str, ...] = ()) -> TraceReport:
    """Every finding of one raw trace, with notes on what it left out."""
    said = list(notes) + list(raw.wrapped)
    if len(raw.blocks_traced) < raw.blocks_total:
        said.append(f"{len(raw.blocks_traced):,} of {raw.blocks_total:,} blocks traced (the first, the last and evenly "
                    "spaced ones); races between blocks and errors in the others are not seen.")
    if raw.accesses_dropped:
        said.append(f"{raw.accesses_dropped:,} accesses after the first {len(raw.records):,} were not recorded "
                    "(bounds were still checked); findings cover the recorded ones.")
    said.append(an.CANNOT_SEE)
    return TraceReport(
        kernel=raw.kernel,
        label=label or raw.kernel,
        grid=raw.grid,
        block=raw.block,
        blocks_traced=len(raw.blocks_traced),
        blocks_total=raw.blocks_total,
        accesses=len(raw.records),
        accesses_dropped=raw.accesses_dropped,
        races=tuple(an.find_races(raw)),
        out_of_bounds=tuple(an.out_of_bounds(raw)),
        out_of_bounds_count=raw.out_of_bounds_count,
        divergence=tuple(an.barrier_divergence(raw)),
        barrier_intervals=an.barrier_intervals(raw),
        sectors=tuple(an.coalescing(raw)),
        banks=tuple(an.bank_conflicts(raw)),
        picture=None if (p := an.picture(raw)) is None else tuple(p),
        error=raw.error,
        notes=tuple(said),
        source=raw.source_file,
        collectives=tuple(sorted((_CUDA_NAMES.get(kind, kind), count) for kind, count in raw.collectives.items())),
    )


_CUDA_NAMES = {kind: name for name, kind in WARP_SYNC.items()}  # "shfl_down" -> "shfl_down_sync"
