"""The verdict of one submission: what crosses from the sandboxed child to the app as JSON.

``status`` is one of: "passed" (every test), "wrong" (a result or a kernel error), "refused"
(the checker, the problem's launch rules, or the sandbox's limits said no), "error" (the
harness itself could not finish: not the learner's fault, reported in one line).

Exit codes (``python -m gpu solve``, and ``python -m gpu trace`` for its own outcomes): 0 passed (clean),
1 wrong (a finding), 2 refused (bad input), 3 the lab itself failed.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace

from gpu.core.safe_text import shown

EXIT_CODES = {"passed": 0, "wrong": 1, "refused": 2, "error": 3}
EXIT_LAB_FAILED = 3  # the harness or the CLI itself failed: never the learner's code


def mismatch_text(miss: dict) -> str:
    """One line for the first wrong value: test, index, expected, got, and the thread where known."""
    if "error" in miss:
        return miss["error"]
    if miss.get("index") is None:
        return f"{miss['output']} has {miss['got']}, expected {miss['expected']}"
    index = ", ".join(map(str, miss["index"]))
    more = f"; {miss['wrong_count']:,} wrong in all" if miss.get("wrong_count", 1) > 1 else ""
    if miss.get("inputs"):  # what the kernel read there: a learner can redo the arithmetic by hand
        more += "; the inputs there: " + ", ".join(f"{k}[{index}] = {v!r}" for k, v in miss["inputs"].items())
    if miss.get("scalars"):
        more += "; with " + ", ".join(f"{k} = {v!r}" for k, v in miss["scalars"].items())
    if miss.get("never_written"):
        thread = f"; it is {miss['thread']}'s element" if miss.get("thread") else ""
        return (f"{miss['output']}[{index}]: expected {miss['expected']!r}, but it was never written (still the "
                f"sentinel){thread}{more}")
    thread = f" (written by {miss['thread']})" if miss.get("thread") else ""
    if miss.get("wrote_nan"):  # not the sentinel: the kernel stored a NaN, most often computed from unwritten memory
        return (f"{miss['output']}[{index}]: expected {miss['expected']!r}, but the kernel wrote NaN{thread} (read "
                "memory no thread had written? In the simulator shared and local arrays start as NaN, so a read "
                f"before its write or a missing cuda.syncthreads() shows this way){more}")
    return f"{miss['output']}[{index}]: expected {miss['expected']!r}, got {miss['got']!r}{thread}{more}"


@dataclass(frozen=True)
class Verdict:
    """One submission's verdict: made once by the judge (``gpu.sandbox.harness``), then only copied with changes
    (``dataclasses.replace``: the sandbox's note, the compiler's facts). Never changed in place."""

    problem: str
    backend: str
    status: str = "running"
    message: str = ""
    tests: list = field(default_factory=list)
    mismatch: dict | None = None
    refusal: dict | None = None
    timing: dict | None = None
    compile_facts: dict | None = None
    compile_facts_note: str = ""
    compile_facts_status: str = ""  # "compiled", "rejected" or "unavailable" (gpu.core.compiler); "" before facts
    threads_per_block: int | None = None
    device: str | None = None
    sandbox: str = ""
    wall_s: float | None = None
    notes: list = field(default_factory=list)  # what the simulator noted on a run that did not fail (a wrapped index)

    @classmethod
    def start(cls, problem: str, backend: str) -> Verdict:
        return cls(problem=problem, backend=backend)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.status, EXIT_LAB_FAILED)

    @property
    def ranked(self) -> bool:
        """Saved to the leaderboard: passed, and (on a GPU) not faster than the memory roof allows."""
        return self.status == "passed" and not (self.timing or {}).get("faster_than_roof", False)

    def refused(self, refusal) -> Verdict:
        """This verdict, refused: the refusal's rule, line and message."""
        return replace(self, refusal=refusal.to_dict(), status="refused", message=shown(str(refusal)))

    def failed(self, message: str) -> Verdict:
        """This verdict, ended by the lab (not the learner's code)."""
        return replace(self, status="error", message=shown(message))

    def finish(self, status: str) -> Verdict:
        """This verdict with its status and the message its tests say."""
        passed = sum(1 for t in self.tests if t["passed"])
        if status == "passed":
            message = f"all {len(self.tests)} tests passed"
        else:
            first = next((t for t in self.tests if not t["passed"]), None)
            message = shown(
                f"{passed} of {len(self.tests)} tests passed; first failure, {first['name']}: {first['message']}"
                if first
                else (mismatch_text(self.mismatch) if self.mismatch else status)
            )
        return replace(self, status=status, message=message)

    def with_facts(self, facts: dict | None, note: str, status: str) -> Verdict:
        """This verdict with the compiler's facts (None: unavailable, ``note`` says why)."""
        return replace(self, compile_facts=facts, compile_facts_note=note, compile_facts_status=status)

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=str)

    @classmethod
    def from_dict(cls, data: dict) -> Verdict:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


__all__ = ["EXIT_CODES", "EXIT_LAB_FAILED", "Verdict", "mismatch_text"]
