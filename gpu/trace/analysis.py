"""Findings from a memory trace: races, out-of-bounds accesses, barrier divergence,
sectors per request and bank conflicts. Pure functions over ``RawTrace``'s records
(tuples ``(block, thread, interval, array, byte offset, kind, site, occurrence)``), so
each is tested on hand-written records without the simulator.

Definitions (the ones the hardware tools use):

* **race**: two threads of one block touch the same address in the same barrier
  interval, with no ``syncwarp`` both took part in between them (lanes of one warp), and
  the accesses conflict: at least one is a plain write, or one is atomic and the other
  plain (two atomics never race; a plain store racing an atomic does); or two blocks touch
  the same global address (no barrier orders blocks) with conflicting accesses.
* **request**: the accesses of one warp (threads 32·w … 32·w + 31 of a block) at one
  source site on the same dynamic occurrence (the k-th time each thread got there) —
  what one load or store instruction of the warp asks of memory.
* **sectors per request** (global memory): distinct 32-byte sectors a request touches,
  as Nsight Compute counts them; 32 consecutive float32 are 128 bytes = 4 sectors, 32
  float32 a row apart are 32 sectors. Offsets are from the allocation's start, which
  ``cudaMalloc`` aligns to 256 bytes.
* **bank conflicts** (shared memory): 32 banks of 4-byte words; a request takes as many
  passes ("ways") as the most distinct words it needs from one bank. Threads reading the
  same word get it by broadcast: not a conflict.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

from gpu.trace.record import ATOMIC, KIND_NAMES, WRITE, ArrayInfo, RawTrace, Site, unlinear

SECTOR_BYTES = 32
LINE_BYTES = 128
BANKS = 32
BANK_WORD_BYTES = 4
WARP = 32
MAX_REPORTED = 20  # findings of each kind listed in full; the rest counted
MAX_PICTURE_BLOCKS = 4  # the picture is for launches of a few blocks
MAX_PICTURE_ROWS = 20_000

CANNOT_SEE = ("A trace cannot see timing, caches or the real scheduler's interleavings: the simulator runs one "
              "block at a time and one thread at a time, switching at barriers and warp collectives. Races are "
              "found from the accesses themselves (same address, no syncthreads, or within a warp no syncwarp, "
              "between them, one a plain write or one atomic against a plain access), whatever order the threads "
              "ran in.")


@dataclass(frozen=True)
class Who:
    """One access: which thread, where in the source, what it did."""

    block: tuple[int, int, int]
    thread: tuple[int, int, int]
    line: int
    text: str
    kind: str

    def __str__(self) -> str:
        return (f"thread {_xyz(self.thread)} of block {_xyz(self.block)} {_verb(self.kind)} at line {self.line} "
                f"(`{self.text}`)")


@dataclass(frozen=True)
class Race:
    array: str
    space: str
    scope: str  # "in a block" or "between blocks"
    index: tuple[int, ...]
    first: Who
    second: Who
    addresses: int  # distinct addresses where these two sites race

    def __str__(self) -> str:
        more = f" (and {self.addresses - 1:,} more addresses)" if self.addresses > 1 else ""
        where = "in the same barrier interval" if self.scope == "in a block" else "from different blocks"
        return f"race on {self.space} `{self.array}{list(self.index)}`{more} {where}: {self.first}; {self.second}"


@dataclass(frozen=True)
class OutOfBoundsAccess:
    array: str
    shape: tuple[int, ...]
    index: tuple
    who: Who

    def __str__(self) -> str:
        return f"out of bounds: `{self.array}{list(self.index)}` outside shape {tuple(self.shape)}: {self.who}"


@dataclass(frozen=True)
class Divergence:
    block: tuple[int, int, int]
    barrier: int  # 1 for the first syncthreads a thread reaches
    line: int
    text: str
    reached: int
    reached_example: tuple[int, int, int]
    missed: int
    missed_example: tuple[int, int, int]
    missed_did: str  # "exited" or "waited at line L"

    def __str__(self) -> str:
        return (
            f"barrier divergence in block {_xyz(self.block)}: syncthreads #{self.barrier} at line {self.line} was "
            "reached by "
            f"{self.reached:,} threads (e.g. {_xyz(self.reached_example)}) but not by {self.missed:,} "
            f"(e.g. thread {_xyz(self.missed_example)}, which {self.missed_did})"
        )


@dataclass(frozen=True)
class SiteSectors:
    """Global memory at one source site: requests and the 32-byte sectors each touched."""

    array: str
    kind: str
    line: int
    text: str
    requests: int
    sectors_per_request: float
    max_sectors: int
    ideal_sectors_per_request: float  # the bytes asked for, packed: ceil(bytes / 32)
    lines_per_request: float  # 128-byte cache lines

    @property
    def excess(self) -> float:
        return self.sectors_per_request / self.ideal_sectors_per_request if self.ideal_sectors_per_request else 1.0


@dataclass(frozen=True)
class SiteBanks:
    """Shared memory at one source site: requests and the passes each needed."""

    array: str
    kind: str
    line: int
    text: str
    requests: int
    ways: float  # mean passes per request; 1 = conflict-free
    max_ways: int


def _xyz(v: Sequence[int]) -> str:
    return "(" + ", ".join(str(int(x)) for x in v) + ")"


def _verb(kind: str) -> str:
    return {"read": "reads", "write": "writes", "atomic": "adds atomically"}.get(kind, kind)


class _Names:
    """Record fields -> readable findings for one trace."""

    def __init__(self, trace: RawTrace):
        self.t = trace

    def who(self, block: int, thread: int, site: int, kind: int) -> Who:
        s = self.t.sites[site] if 0 <= site < len(self.t.sites) else Site("?", "?", 0, None, None)
        return Who(unlinear(block, self.t.grid), unlinear(thread, self.t.block), s.line, s.text, KIND_NAMES[kind])

    def site(self, site: int) -> Site:
        return self.t.sites[site] if 0 <= site < len(self.t.sites) else Site("?", "?", 0, None, None)


# --- races -------------------------------------------------------------------------


class _Cell:
    """Per address: the first writer, a writer from another agent, the same for readers and for atomics."""

    __slots__ = ("w", "w2", "r", "r2", "a", "a2")

    def __init__(self):
        self.w = self.w2 = self.r = self.r2 = self.a = self.a2 = None

    def add(self, who: tuple, kind: int) -> None:  # who = (agent, block, thread, site, kind); agent: thread or block
        first, second = ("w", "w2") if kind == WRITE else ("a", "a2") if kind == ATOMIC else ("r", "r2")
        mine = getattr(self, first)
        if mine is None:
            setattr(self, first, who)
        elif getattr(self, second) is None and who[0] != mine[0]:
            setattr(self, second, who)

    def conflict(self):
        """Two accesses by different agents, at least one a plain write or one atomic and one plain, or None."""
        if self.w is not None:
            if self.w2 is not None:
                return self.w, self.w2
            for other in (self.r, self.r2, self.a, self.a2):
                if other is not None and other[0] != self.w[0]:
                    return self.w, other
        if self.a is not None:
            for a in (self.a, self.a2):
                for r in (self.r, self.r2):
                    if a is not None and r is not None and a[0] != r[0]:
                        return a, r
        return None


def _conflicting(k1: int, k2: int) -> bool:
    """Two accesses to one address conflict unless both read or both are atomic."""
    return not (k1 == k2 and k1 != WRITE)


def _warp_ordered(trace: RawTrace, block: int, t1: int, k1: int, t2: int, k2: int) -> bool:
    """Whether a ``syncwarp`` both threads took part in lies between their accesses.

    ``k1``, ``k2``: how many warp syncs each thread had passed at its access. A chain of syncs
    through a third lane (partial masks) is not followed: such a pair counts as unordered.
    """
    if t1 // WARP != t2 // WARP:
        return False
    mine, theirs = trace.warp_syncs.get((block, t1), ()), trace.warp_syncs.get((block, t2), ())
    where = {e: j for j, e in enumerate(theirs)}
    for i, e in enumerate(mine):
        j = where.get(e)
        if j is not None and ((i >= k1 and j < k2) or (j >= k2 and i < k1)):
            return True
    return False


MAX_CELL_ACCESSES = 512  # with warp syncs, an address's accesses in one barrier interval compared pairwise: the first


def _first_unordered(trace: RawTrace, block: int, accesses: list[tuple]):
    """The first conflicting pair of different threads with no syncwarp between them (accesses in one block
    interval: (thread, site, kind, warp syncs passed)), or None. Only the first ``MAX_CELL_ACCESSES`` are compared
    (an address touched more often than that between two syncthreads is rare; this bounds the work)."""
    accesses = accesses[:MAX_CELL_ACCESSES]
    for n, (t1, s1, k1, w1) in enumerate(accesses):
        for t2, s2, k2, w2 in accesses[n + 1:]:
            if t1 != t2 and _conflicting(k1, k2) and not _warp_ordered(trace, block, t1, w1, t2, w2):
                return (t1, block, t1, s1, k1), (t2, block, t2, s2, k2)
    return None


def find_races(trace: RawTrace, max_reported: int = MAX_REPORTED) -> list[Race]:
    """Races in a block (same barrier interval) and between blocks (global memory), one per pair of sites.

    Two accesses conflict unless both read or both are atomic: a plain store racing an atomic
    is a race. In a block, a ``syncthreads`` between them orders them, and so does a
    ``syncwarp`` that both took part in (lanes of one warp).
    """
    in_block: dict[tuple, _Cell] = defaultdict(_Cell)
    across: dict[tuple, _Cell] = defaultdict(_Cell)
    warp_level = bool(trace.warp_syncs)
    by_cell: dict[tuple, list[tuple]] = defaultdict(list)  # with warp syncs: every access of a cell, in order
    spaces = {a.id: a.space for a in trace.arrays}
    for record in trace.records:
        block, thread, interval, array, offset, kind, site = record[:7]
        if warp_level:
            by_cell[(block, array, offset, interval)].append((thread, site, kind, record[8] if len(record) > 8 else 0))
        else:
            in_block[(block, array, offset, interval)].add((thread, block, thread, site, kind), kind)
        if spaces[array] == "global":
            across[(array, offset)].add((block, block, thread, site, kind), kind)
    names = _Names(trace)
    found: dict[tuple, tuple] = {}
    counts: Counter = Counter()

    def note(scope: str, array: int, offset: int, pair) -> None:
        a, b = sorted(pair, key=lambda w: (w[3], w[4], w[1], w[2]))
        sig = (scope, array, a[3], a[4], b[3], b[4])
        counts[sig] += 1
        if sig not in found:
            found[sig] = (trace.arrays[array], offset, names.who(a[1], a[2], a[3], a[4]),
                          names.who(b[1], b[2], b[3], b[4]))

    for key, cell in in_block.items():
        if (pair := cell.conflict()) is not None:
            note("in a block", key[1], key[2], pair)
    for key, accesses in by_cell.items():
        kinds = {a[2] for a in accesses}
        if WRITE not in kinds and not (ATOMIC in kinds and len(kinds) > 1):
            continue  # reads only, or atomics only: nothing to order
        if (pair := _first_unordered(trace, key[0], accesses)) is not None:
            note("in a block", key[1], key[2], pair)
    # between blocks the agents are blocks: two threads of one block never count here
    for key, cell in across.items():
        if (pair := cell.conflict()) is not None:
            note("between blocks", key[0], key[1], pair)
    races = []
    for sig, (info, offset, first, second) in found.items():
        races.append(Race(info.name, info.space, sig[0], info.index_of(offset), first, second, counts[sig]))
    races.sort(key=lambda r: (r.scope != "in a block", r.first.line, r.second.line))
    return races[:max_reported]


# --- out of bounds -----------------------------------------------------------------


def out_of_bounds(trace: RawTrace, max_reported: int = MAX_REPORTED) -> list[OutOfBoundsAccess]:
    """The recorded out-of-bounds accesses, one per (site, array) with its first thread."""
    names, seen, out = _Names(trace), set(), []
    for o in trace.out_of_bounds:
        if (o.site, o.array) in seen:
            continue
        seen.add((o.site, o.array))
        s = names.site(o.site)
        out.append(OutOfBoundsAccess(o.array, o.shape, o.index, Who(o.block, o.thread, s.line, s.text, o.kind)))
    return out[:max_reported]


# --- barriers ----------------------------------------------------------------------


def barrier_divergence(trace: RawTrace, max_reported: int = MAX_REPORTED) -> list[Divergence]:
    """Blocks whose threads did not all pass the same barriers in the same order.

    A thread that never synchronised has an empty sequence. The simulator releases a
    barrier once every *live* thread waits there (exited threads are not waited for),
    and counts any two ``syncthreads`` as the same barrier; on a GPU this is undefined
    behaviour (a hang or a silently wrong result), hence a finding.
    """
    names = _Names(trace)
    threads = int(trace.block[0] * trace.block[1] * trace.block[2])
    found = []
    for block in trace.blocks_traced:
        seqs = [trace.barriers.get((block, t), ()) for t in range(threads)]
        if len(set(seqs)) <= 1:
            continue
        k = 0  # the first barrier position where the threads differ
        while len({s[k] if k < len(s) else None for s in seqs}) == 1:
            k += 1
        at = Counter(s[k] for s in seqs if k < len(s))
        site = at.most_common(1)[0][0]
        reached = [t for t, s in enumerate(seqs) if k < len(s) and s[k] == site]
        missed = [t for t, s in enumerate(seqs) if not (k < len(s) and s[k] == site)]
        m = missed[0]
        did = "exited" if k >= len(seqs[m]) else f"waited at line {names.site(seqs[m][k]).line} instead"
        s = names.site(site)
        found.append(Divergence(unlinear(block, trace.grid), k + 1, s.line, s.text, len(reached),
                                unlinear(reached[0], trace.block), len(missed), unlinear(m, trace.block), did))
    return found[:max_reported]


def barrier_intervals(trace: RawTrace) -> int:
    """The most barrier intervals any traced block had (1 = no syncthreads)."""
    return 1 + max((len(s) for s in trace.barriers.values()), default=0)


# --- coalescing and banks ----------------------------------------------------------


def _requests(trace: RawTrace, space: str) -> dict[tuple, list[tuple[int, int]]]:
    """(site, array, kind, block, warp, occurrence) -> [(thread, byte offset)] for arrays in ``space``."""
    wanted = {a.id for a in trace.arrays if a.space == space}
    out: dict[tuple, list] = defaultdict(list)
    for block, thread, _, array, offset, kind, site, occurrence, *_ in trace.records:
        if array in wanted:
            out[(site, array, kind, block, thread // WARP, occurrence)].append((thread, offset))
    return out


def sectors(offsets: Iterable[int], itemsize: int) -> int:
    """Distinct 32-byte sectors touched by elements of ``itemsize`` bytes at these byte offsets."""
    touched: set[int] = set()
    for o in offsets:
        touched.update(range(o // SECTOR_BYTES, (o + itemsize - 1) // SECTOR_BYTES + 1))
    return len(touched)


def bank_ways(offsets: Iterable[int], itemsize: int) -> int:
    """Passes one shared-memory request needs: the most distinct 4-byte words it wants from one bank."""
    words: set[int] = set()
    for o in offsets:
        words.update(range(o // BANK_WORD_BYTES, (o + itemsize - 1) // BANK_WORD_BYTES + 1))
    per_bank = Counter(w % BANKS for w in words)
    return max(per_bank.values(), default=0)


def coalescing(trace: RawTrace) -> list[SiteSectors]:
    """Sectors per request at each global-memory site (reads, writes and atomics apart), in source order."""
    names = _Names(trace)
    per_site: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)
    for (site, array, kind, *_), accesses in _requests(trace, "global").items():
        size = trace.arrays[array].itemsize
        offsets = {o for _, o in accesses}
        per_site[(site, array, kind)].append((sectors(offsets, size), math.ceil(len(offsets) * size / SECTOR_BYTES),
                                              len({o // LINE_BYTES for o in offsets})))
    out = []
    for (site, array, kind), reqs in per_site.items():
        s = names.site(site)
        n = len(reqs)
        out.append(SiteSectors(trace.arrays[array].name, KIND_NAMES[kind], s.line, s.text, n,
                               sum(r[0] for r in reqs) / n, max(r[0] for r in reqs), sum(r[1] for r in reqs) / n,
                               sum(r[2] for r in reqs) / n))
    return sorted(out, key=lambda r: (r.line, r.text, r.kind))


def bank_conflicts(trace: RawTrace) -> list[SiteBanks]:
    """Bank-conflict ways at each shared-memory site, in source order (atomics included)."""
    names = _Names(trace)
    per_site: dict[tuple, list[int]] = defaultdict(list)
    for (site, array, kind, *_), accesses in _requests(trace, "shared").items():
        per_site[(site, array, kind)].append(bank_ways({o for _, o in accesses}, trace.arrays[array].itemsize))
    out = []
    for (site, array, kind), ways in per_site.items():
        s = names.site(site)
        out.append(
            SiteBanks(
                trace.arrays[array].name, KIND_NAMES[kind], s.line, s.text, len(ways), sum(ways) / len(ways), max(ways)
            )
        )
    return sorted(out, key=lambda r: (r.line, r.text, r.kind))


# --- the picture -------------------------------------------------------------------


def cell_of(info: ArrayInfo, offset: int) -> tuple[int, int]:
    """(row, column) of an element for drawing: 2-D arrays as they are, 1-D in rows of 32."""
    index = info.index_of(offset)
    if len(index) >= 2:
        return int(index[-2]), int(index[-1])
    flat = index[0] if index else 0
    return flat // WARP, flat % WARP


def picture(trace: RawTrace) -> list[dict] | None:
    """Which thread read and wrote which cell, one row per (array, cell, thread, kind); None for large launches."""
    if len(trace.blocks_traced) > MAX_PICTURE_BLOCKS or len(trace.blocks_traced) < trace.blocks_total:
        return None
    rows, seen = [], set()
    per_block = int(trace.block[0] * trace.block[1] * trace.block[2])
    threads = {t: _xyz(unlinear(t, trace.block)) for t in range(per_block)}
    blocks = {b: _xyz(unlinear(b, trace.grid)) for b in trace.blocks_traced}
    labels = [f"{a.name} ({a.space})" for a in trace.arrays]
    for block, thread, _, array, offset, kind, *_ in trace.records:
        key = (array, offset, block, thread, kind)
        if key in seen:
            continue
        seen.add(key)
        info = trace.arrays[array]
        row, col = cell_of(info, offset)
        rows.append({"array": labels[array], "row": row, "col": col, "index": str(list(info.index_of(offset))),
                     "global_thread": block * per_block + thread, "thread": threads[thread], "block": blocks[block],
                     "kind": KIND_NAMES[kind]})
        if len(rows) >= MAX_PICTURE_ROWS:
            return None
    return rows


def from_dict(cls, data: dict):
    """Rebuild a flat finding dataclass (Divergence, SiteSectors, SiteBanks) from its ``asdict`` form."""
    return cls(**{f.name: tuple(data[f.name]) if isinstance(data[f.name], list) else data[f.name] for f in fields(cls)})
