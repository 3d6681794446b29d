"""End every process a graded notebook started, however it detached itself.

A learner's notebook can start processes that outlive its kernel: `subprocess.Popen(...,
start_new_session=True)`, a double fork, `nohup cmd &`. The kernel runs in a session of its
own, and a process that calls setsid leaves it, so killing the kernel's process group is not
enough. On Linux the grader therefore

- labels each kernel: a variable in its environment, which every process it starts inherits,
  so when the notebook is done every process still carrying the label is killed
  (`ending_labelled`), while the other learners' notebooks run on;
- becomes a child subreaper (prctl PR_SET_CHILD_SUBREAPER) while a class is graded: a
  process whose parent exits is adopted by the grader instead of by init, so even one that
  cleared its environment stays a descendant, and when the class is done every descendant
  that did not exist before grading is killed (`adopting`).

Elsewhere (no /proc, no prctl) these steps do nothing, and the kernel's own process group is
all that ends with it. A process started through another service (cron, systemd-run, ssh)
is no descendant at all: only a container or a throw-away account catches that.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

LABEL = "RAGLAB_GRADED_NOTEBOOK"  # the environment variable a graded kernel carries
PROC = Path("/proc")
PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37  # linux/prctl.h
ROUNDS = 20  # kill rounds: a process may fork between a scan and the kill; each round ends more
PAUSE = 0.05  # seconds between rounds, for the killed to die and their orphans to be adopted

Process = tuple[int, int]  # (pid, start time in clock ticks): a pid can be reused, the pair not


def new_label() -> dict[str, str]:
    """The environment entry that marks one notebook's kernel and everything it starts."""
    return {LABEL: secrets.token_hex(8)}


def ending_labelled(label: dict[str, str]) -> None:
    """Kill every process that carries `label` in its environment (a notebook's leftovers)."""
    marker = "".join(f"{key}={value}" for key, value in label.items()).encode()
    _kill_until_none(lambda: {p for p in _processes() if marker in _environment(p[0])})


# --- a class: adopt orphans, end them all at the end --------------------------------------------

_lock = threading.Lock()
_depth = 0  # nested or concurrent `adopting` blocks: the last one out ends the strays
_before: set[Process] = set()
_was_subreaper = False


@contextmanager
def adopting() -> Iterator[None]:
    """While the block runs, orphans of this process's descendants are adopted by it (Linux);
    when the last such block ends, every descendant that did not exist before is killed."""
    global _depth, _before, _was_subreaper
    with _lock:
        if _depth == 0:
            _before = _descendants() | _table(zombies=True).keys()
            _was_subreaper = _subreaper(True)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _kill_until_none(lambda: _descendants() - _before)
                _reap(_table(zombies=True).keys() - _before)
                _subreaper(_was_subreaper)


def _subreaper(on: bool) -> bool:
    """Make this process a child subreaper (or not); returns whether it was one. Linux only."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        was = ctypes.c_int(0)
        prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(was))
        prctl(PR_SET_CHILD_SUBREAPER, int(on))
        return bool(was.value)
    except (OSError, AttributeError):  # not Linux: no prctl
        return False


# --- processes, as /proc shows them --------------------------------------------------------------


def _kill_until_none(find) -> None:
    """Kill what `find()` returns, again and again until it finds nothing (or ROUNDS pass),
    and reap those that were this process's own children (adopted orphans)."""
    killed: set[int] = set()
    for _ in range(ROUNDS):
        found = find()
        if not found:
            break
        for pid, _start in found:
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(PAUSE)
    _reap((pid, 0) for pid in killed)  # only those: another child's exit status is not ours


def _reap(processes: Iterable[Process]) -> None:
    """Collect the exit status of those of `processes` that are this process's dead children
    (an adopted orphan stays a zombie until its adopter does)."""
    for pid, _start in processes:
        with suppress(OSError):  # not our child, or not dead
            os.waitpid(pid, os.WNOHANG)


def _processes() -> set[Process]:
    """Every running process (zombies left out); empty where there is no /proc."""
    return {p for p, _parent in _table().items()}


def _descendants() -> set[Process]:
    """Every running process below this one."""
    table = _table()
    found: set[Process] = set()
    parents = {os.getpid()}
    while parents:
        children = {p for p, parent in table.items() if parent in parents and p not in found}
        found |= children
        parents = {pid for pid, _start in children}
    return found


def _table(*, zombies: bool = False) -> dict[Process, int]:
    """(pid, start time) -> parent pid, for every process that is not a zombie (with
    `zombies`: for this process's children that are)."""
    table = {}
    for entry in PROC.glob("[0-9]*") if PROC.is_dir() else []:
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone since the listing
            continue
        # "pid (name) state ppid ... starttime ...": the name may hold spaces and parentheses
        fields = stat[stat.rindex(")") + 2 :].split()
        dead, parent = fields[0] == "Z", int(fields[1])
        if dead == zombies and (not zombies or parent == os.getpid()):
            table[(int(entry.name), int(fields[19]))] = parent
    return table


def _environment(pid: int) -> bytes:
    try:
        return (PROC / str(pid) / "environ").read_bytes()
    except OSError:  # gone, or another user's
        return b""
