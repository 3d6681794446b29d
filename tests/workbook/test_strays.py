"""Grading ends every process a notebook started: detached into a new session, double-forked,
or with its environment cleared (Linux; elsewhere `raglab.workbook.strays` does nothing).
(`strays` is imported in the tests that use it: the last test runs on any version.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from raglab.workbook.grading import grade

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]

# A notebook cell: three ways to outlive the kernel, each writing its pid to PIDS.
SPAWN = """import os, subprocess, sys
PIDS = {pids!r}
def note(pid):
    with open(PIDS, "a") as file:
        file.write(f"{{pid}}\\n")
note(subprocess.Popen({sleeper!r}, start_new_session=True).pid)
note(subprocess.Popen({sleeper!r}, start_new_session=True, env={{}}).pid)
read, write = os.pipe()
if os.fork() == 0:  # a double fork: the grandchild's parent exits at once
    os.setsid()
    if os.fork() == 0:
        os.write(write, str(os.getpid()).encode())
        os.execv(sys.executable, {sleeper!r})
    os._exit(0)
note(int(os.read(read, 32)))
"""


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def ended(pids: list[int]) -> list[int]:
    """The pids still alive, after killing them (so a failing test leaves nothing behind)."""
    time.sleep(0.2)
    left = [pid for pid in pids if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


def test_a_label_ends_every_process_that_inherited_it_however_detached():
    from raglab.workbook import strays

    label = strays.new_label()
    started = [
        subprocess.Popen(SLEEPER, env={**os.environ, **label}, start_new_session=True).pid,
        subprocess.Popen(["nohup", *SLEEPER], env={**os.environ, **label}).pid,
    ]
    unlabelled = subprocess.Popen(SLEEPER, start_new_session=True)
    strays.ending_labelled(label)
    assert ended(started) == []
    assert alive(unlabelled.pid)  # another notebook's, or the instructor's: left alone
    unlabelled.kill()
    unlabelled.wait()


def test_adopting_ends_the_orphans_that_cleared_their_environment():
    from raglab.workbook import strays

    with strays.adopting():
        script = (
            "import subprocess, sys; "
            f"print(subprocess.Popen({SLEEPER!r}, env={{}}, start_new_session=True, "
            "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)"  # run() reads to EOF
        )
        orphan = int(subprocess.run([sys.executable, "-c", script], capture_output=True).stdout)
        time.sleep(0.2)
        assert alive(orphan)  # its parent is gone: adopted, still running
    assert ended([orphan]) == []


def test_grading_ends_every_process_a_notebook_started(tmp_path):
    pids = tmp_path / "pids.txt"
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    source = SPAWN.format(pids=str(pids), sleeper=SLEEPER)
    solution = {"raglab": {"exercise": "cosine", "function": "cosine"}}
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {**cell, "id": "spawn", "source": source},
            {**cell, "id": "solution", "source": "def cosine(a, b): ...", "metadata": solution},
        ],
    }
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "notes.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    report = grade([tmp_path / "ann"], course=None, timeout=60)
    assert [g.exercise for g in report.grades] == ["cosine"]  # the notebook did run
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) == 3
    assert ended(started) == []
