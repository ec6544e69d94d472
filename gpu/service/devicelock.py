"""The per-device FIFO lock, shared by every app process on one host.

``FifoLock`` (locks.py) lives inside one process: two Streamlit processes behind one
proxy would each have their own and overlap on the GPU. ``FileFifoLock`` keeps the same
interface (``hold``, ``snapshot``, ``intervals``, ``busy``, ``waiting``) with its state in
a folder that every process on the host sees:

    <dir>/<name>.lock      flock(2) on it is the mutual exclusion itself. The kernel
                           drops it when its holder exits, even on SIGKILL, so a crashed
                           process never leaves the device locked.
    <dir>/<name>.seq       the next ticket number, read and bumped under flock: tickets
                           are unique and increase across every process.
    <dir>/<name>.queue/    one file per waiting run, named ``<ticket>.<pid>``: a run's
                           place is the number of lower tickets (plus the holder), which
                           is what "Queued behind N runs" shows. Only the lowest ticket
                           tries the lock, so runs start in arrival order.
    <dir>/<name>.holder    JSON {pid, label, since}: who holds the lock, for the queue
                           count and the sidebar.

A ticket or holder file whose process is gone (killed while waiting) is removed by the
next waiter that sees it, so the queue never stalls on a dead run. flock is taken per
open file, so threads of one process queue against each other exactly as processes do.
Waiters poll: the first in line every ``poll_s`` (a hand-over from another process costs up
to that), the others every ``queue_poll_s`` (their place changes only when a run ends), so
thirty waiting sessions do not take the CPU (and the GIL) from the run in progress. Within
one process a waiter is also woken the moment a run of that process takes, leaves or gives
up its place (``_Changes``): a class's judges run in the server's threads, and the one second
in line used to sleep through most of a short judge's hand-over (gaps of 0.2-1 s between
judges of 0.1-0.6 s, measured in a class of 16). A poll can
miss a place (the run ahead may start and end between two looks); ``locks.Countdown``
reports every place in between, so a waiter's queue always counts down to 1.

The folder is ``$KERNEL_LAB_LOCK_DIR``, else ``locks/`` beside the history database
(processes that share a History share the GPUs' queues), else a folder in the system
temporary directory. It must be on a local file system (flock over NFS is unreliable).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from gpu.core import settings as _settings
from gpu.service.locks import Countdown, Interval, LockState

LOCK_DIR_ENV = _settings.LOCK_DIR.name


class _Changes:
    """A count of the changes to one lock's queue made by this process, and a wait for the next one."""

    def __init__(self) -> None:
        self._count = 0
        self._cond = threading.Condition()

    @property
    def count(self) -> int:
        with self._cond:
            return self._count

    def bump(self) -> None:
        with self._cond:
            self._count += 1
            self._cond.notify_all()

    def wait_past(self, seen: int, timeout: float) -> None:
        """Return once the count is past ``seen`` (at once if it already is), or after ``timeout`` seconds."""
        with self._cond:
            self._cond.wait_for(lambda: self._count != seen, timeout)


_CHANGES: dict[str, _Changes] = {}  # by the lock file's path: every FileFifoLock object of one lock shares one
_CHANGES_GUARD = threading.Lock()


def _changes(path: Path) -> _Changes:
    with _CHANGES_GUARD:
        return _CHANGES.setdefault(str(path.resolve()), _Changes())


def default_lock_dir() -> Path:
    """Where the device locks live: $KERNEL_LAB_LOCK_DIR, else beside the history database."""
    configured = _settings.settings().lock_dir
    if configured:
        return Path(configured).expanduser()
    from gpu.service.store import default_path

    return default_path().parent / "locks"


def node_lock_dir() -> Path:
    """The lock folder on a cluster worker node (no history there): $KERNEL_LAB_LOCK_DIR or /tmp."""
    configured = _settings.settings().lock_dir
    if configured:
        return Path(configured).expanduser()
    return Path(tempfile.gettempdir()) / f"kernel-lab-locks-{os.getuid()}"


def usable_dir(preferred: Path) -> Path:
    """``preferred`` if a lock can be made there, else a per-user folder in the temporary directory."""
    for folder in (preferred, Path(tempfile.gettempdir()) / f"kernel-lab-locks-{os.getuid()}"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / ".probe"
            with open(probe, "a"):
                pass
            return folder
        except OSError:
            continue
    raise OSError(f"no folder for the device locks: {preferred} and the temporary directory are not writable")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class FileFifoLock:
    """Mutual exclusion across processes on one host, first come first served, with a visible queue.

    ``hold(label, on_wait)`` takes a ticket, waits until it is the lowest and the flock is
    free, and holds the lock for the body of the ``with``. While waiting it calls
    ``on_wait(ahead)`` (runs ahead, the holder included) when that number changes and at
    least every ``heartbeat_s``; the callback may raise to leave the queue. ``intervals()``
    are this process's own holds (perf_counter seconds, which on Linux is CLOCK_MONOTONIC
    and so comparable between processes of one host).
    """

    def __init__(self, name: str, directory: str | os.PathLike, history: int = 256,
                 poll_s: float = 0.02, queue_poll_s: float = 0.25, heartbeat_s: float = 1.0):
        self.name = name
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_path = self.directory / f"{name}.lock"
        self._seq_path = self.directory / f"{name}.seq"
        self._holder_path = self.directory / f"{name}.holder"
        self._queue_dir = self.directory / f"{name}.queue"
        self._queue_dir.mkdir(exist_ok=True)
        self._poll_s = poll_s
        self._queue_poll_s = queue_poll_s
        self._heartbeat_s = heartbeat_s
        self._intervals: deque[Interval] = deque(maxlen=history)
        self._changes = _changes(self._lock_path)

    # --- state shared through the folder ---------------------------------------------

    def _next_ticket(self, label: str) -> tuple[int, int]:
        """Take the next ticket and make it visible in the queue; returns (ticket, runs ahead of it on arrival).

        All three happen under the sequence file's flock. A ticket taken but not yet in the
        queue would be missed by a later arrival counting the runs ahead of it, whose place
        would then go up when the earlier ticket appeared. And the place is counted before
        the ticket is visible: once others can see it the holder may leave, and the first
        place would be missed.
        """
        fd = os.open(self._seq_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = os.read(fd, 32).strip()
            ticket = int(raw) if raw.isdigit() else 0
            ahead = self._ahead_of(ticket)  # every lower ticket is visible: each was written under this flock
            (self._queue_dir / self._ticket_name(ticket)).write_text(label)
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, str(ticket + 1).encode())
            return ticket, ahead
        finally:
            os.close(fd)  # closing drops the flock

    @staticmethod
    def _ticket_name(ticket: int) -> str:
        return f"{ticket:012d}.{os.getpid()}"

    def _tickets(self) -> list[tuple[int, str]]:
        """Live tickets in order, as (ticket, file name); files of dead processes are removed."""
        live = []
        for entry in os.listdir(self._queue_dir):
            ticket, _, pid = entry.partition(".")
            if not (ticket.isdigit() and pid.isdigit()):
                continue
            if _alive(int(pid)):
                live.append((int(ticket), entry))
            else:
                self._unlink(self._queue_dir / entry)
        return sorted(live)

    def _ahead_of(self, ticket: int) -> int:
        """Runs in front of ``ticket``: live lower tickets, plus the holder."""
        lower = sum(1 for other, _name in self._tickets() if other < ticket)
        return lower + (1 if self._holder() is not None else 0)

    def _holder(self) -> dict | None:
        """The holder's {pid, label, since}, or None when free (a dead holder's file is removed)."""
        try:
            info = json.loads(self._holder_path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(info, dict) or not _alive(int(info.get("pid", -1))):
            self._unlink(self._holder_path)
            return None
        return info

    @staticmethod
    def _unlink(path: Path) -> None:
        try:
            path.unlink()
        except FileNotFoundError:
            pass

    # --- the FifoLock interface --------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._holder() is not None

    @property
    def waiting(self) -> int:
        """Runs queued on this host (every process), not counting the holder."""
        return len(self._tickets())

    def snapshot(self) -> LockState:
        holder = self._holder()
        held = None if holder is None else max(0.0, time.time() - float(holder.get("since", time.time())))
        return LockState(self.name, None if holder is None else str(holder.get("label")), held, len(self._tickets()))

    def intervals(self) -> list[Interval]:
        return list(self._intervals)

    @contextmanager
    def hold(self, label: str = "run", on_wait: Callable[[int], None] | None = None) -> Iterator[None]:
        """Wait for our turn (in ticket order, across processes), then hold the lock."""
        countdown = Countdown(on_wait, self._heartbeat_s)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        ticket_path: Path | None = None
        try:
            ticket, ahead = self._next_ticket(label)  # visible in the queue from here on
            mine = self._ticket_name(ticket)
            ticket_path = self._queue_dir / mine
            countdown.see(ahead)  # our place on arrival
            while True:
                seen = self._changes.count  # (before looking: a change made after the look ends the wait below)
                order = [name for _, name in self._tickets()]
                if mine not in order:  # removed by someone who thought we were dead: take a place again
                    ticket_path.write_text(label)
                    continue
                holder = self._holder()
                ahead = order.index(mine) + (1 if holder is not None else 0)
                if ahead == 0:
                    countdown.see(0)  # our turn: the countdown ends at 1 before the run starts
                    if self._try_flock(fd):
                        break
                else:
                    countdown.see(ahead)
                self._changes.wait_past(seen, self._poll_s if order.index(mine) == 0 else self._queue_poll_s)
        except BaseException:
            if ticket_path is not None:
                self._unlink(ticket_path)  # give up our place without blocking those behind us
                self._changes.bump()
            os.close(fd)
            raise
        start = time.perf_counter()
        try:
            self._write_holder(label)
            self._unlink(ticket_path)
            self._changes.bump()  # every place behind ours moved up one
            yield
        finally:
            self._intervals.append(Interval(label, start, time.perf_counter()))
            self._unlink(self._holder_path)  # before unlocking: the next holder writes its own
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            self._changes.bump()  # the next in line (of this process) tries now

    def _try_flock(self, fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return False
            raise

    def _write_holder(self, label: str) -> None:
        tmp = self._holder_path.with_name(f"{self._holder_path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"pid": os.getpid(), "label": label, "since": time.time()}))
        os.replace(tmp, self._holder_path)  # atomic: readers never see half a file
