"""A hostile class: what one learner's submission can do to `raglab grade` and `raglab progress`.

Each attack builds a small class folder from the course's own notebooks (exercises/ for the
stubs, notebooks/ for the solutions), grades it with the `raglab` command, and reads what an
instructor would read: the table, the CSV files, the processes left running.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from attacks.common import ROOT, run, traceback_in

CHUNKING = "04_implement_chunking.ipynb"
START = "00_start_here.ipynb"  # no exercises: graded without starting a kernel
SOLVED = ROOT / "notebooks" / CHUNKING
STUB = ROOT / "exercises" / CHUNKING
# What the course hands out for notebook 04, read from its student notebook (not a submission).
COURSE_POINTS = {
    e["exercise"]: e["points"]
    for e in json.loads(STUB.read_text(encoding="utf-8"))["metadata"]["raglab"]["exercises"]
}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # OWASP: cells a spreadsheet may evaluate


def notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def save(nb: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def cell(nb: dict, cell_id: str) -> dict:
    return next(c for c in nb["cells"] if c.get("id") == cell_id)


def with_chunk(source: str) -> dict:
    """The student notebook with `source` as the learner's chunk cell."""
    nb = notebook(STUB)
    cell(nb, "ex1-solution")["source"] = source
    return nb


def handed_out(tmp: Path) -> Path:
    """The course these classes were given: notebooks 00 and 04 of exercises/ (every learner
    is graded out of the whole course, so the full exercises/ would add 36 points)."""
    course = tmp / "course"
    for name in (START, CHUNKING):
        save(notebook(ROOT / "exercises" / name), course / name)
    return course


def grade(folder: Path, *extra: str, timeout: float = 300):
    out = folder.parent / f"{folder.name}.csv"
    course = handed_out(folder.parent)
    result = run(
        "grade", str(folder), "--csv", str(out), "--timeout", "30", "--course", str(course),
        *extra, timeout=timeout,
    )  # fmt: skip
    rows = list(csv.DictReader(out.open(encoding="utf-8", newline=""))) if out.exists() else None
    return result, rows


def crashed(result) -> str | None:
    if traceback_in(result):
        return f"FAILED: traceback: {result.stderr.strip().splitlines()[-1][:90]}"
    return None


# --- 13a one learner's malformed metadata -------------------------------------------------------


def malformed_metadata(tmp: Path) -> str:
    class_ = tmp / "class"
    save(notebook(SOLVED), class_ / "good" / CHUNKING)
    text_points = notebook(SOLVED)
    cell(text_points, "ex1-solution")["metadata"]["raglab"]["points"] = "ten"
    save(text_points, class_ / "text_points" / CHUNKING)
    list_name = notebook(SOLVED)
    cell(list_name, "ex1-solution")["metadata"]["raglab"]["exercise"] = ["chunk"]
    list_name["metadata"]["raglab"] = {"exercises": [{"exercise": ["chunk"], "points": {}}]}
    save(list_name, class_ / "list_name" / CHUNKING)
    wrong_types = notebook(SOLVED)
    wrong_types["metadata"]["raglab"] = ["not", "an", "object"]
    cell(wrong_types, "ex2-solution")["metadata"] = {"raglab": "split_sections"}
    save(wrong_types, class_ / "wrong_types" / CHUNKING)
    result, rows = grade(class_)
    if problem := crashed(result):
        return problem
    if rows is None:
        return "FAILED: no CSV written (the whole class lost its grades)"
    good = {r["exercise"]: r["passed"] for r in rows if r["learner"] == "good"}
    if good != {exercise: "true" for exercise in COURSE_POINTS}:
        return f"FAILED: the well-formed learner's grades changed: {good}"
    learners = {r["learner"] for r in rows}
    if learners != {"good", "text_points", "list_name", "wrong_types"}:
        return f"FAILED: learners missing from the CSV: {sorted(learners)}"
    return "held"


# --- 13b points set by the learner ---------------------------------------------------------------


def learner_sets_points(tmp: Path) -> str:
    greedy = notebook(SOLVED)
    cell(greedy, "ex1-solution")["metadata"]["raglab"]["points"] = 100
    greedy["metadata"]["raglab"] = {
        "exercises": [
            {"exercise": "chunk", "function": "chunk", "points": 100},
            {"exercise": "split_sections", "function": "split_sections", "points": 100},
            {"exercise": "cosine", "function": "chunk", "points": 100},
        ]
    }
    save(greedy, tmp / "class" / "greedy" / CHUNKING)
    result, rows = grade(tmp / "class")
    if problem := crashed(result):
        return problem
    if rows is None:
        return f"FAILED: no CSV ({result.stderr.strip()[-90:]})"
    points = {r["exercise"]: int(r["max_points"]) for r in rows}
    if points != COURSE_POINTS:
        return f"FAILED: the submission set its own points: {points}"
    return "held"


# --- 13c a wrapper that captures the reference at definition time -------------------------------

SIGNATURE = "def chunk(text: str, size: int = 800, overlap: int = 100"
WRAPPERS = {
    "default argument": "import raglab.ingest.chunking as _ref\n\n"
    + SIGNATURE
    + ", _chunk=_ref.chunk):\n    return _chunk(text, size, overlap)\n",
    "closure over a module attribute": "import raglab.ingest.chunking as _ref\n\n\n"
    "def _make():\n    found = getattr(_ref, 'chunk')\n\n"
    "    def chunk(text, size=800, overlap=100):\n        return found(text, size, overlap)\n\n"
    "    return chunk\n\n\nchunk = _make()\n",
    "functools.partial": "import functools\nimport raglab.ingest.chunking as _ref\n\n"
    "_partial = functools.partial(_ref.chunk)\n\n\n"
    + SIGNATURE
    + "):\n    return _partial(text, size, overlap)\n",
    "class attribute": "import raglab.ingest.chunking as _ref\n\n\nclass _Keep:\n"
    "    it = staticmethod(_ref.chunk)\n\n\n"
    + SIGNATURE
    + "):\n    return _Keep.it(text, size, overlap)\n",
    "bound __call__": "import raglab\n\n_call = raglab.chunk.__call__\n\n\n"
    + SIGNATURE
    + "):\n    return _call(text, size, overlap)\n",
    "copy of its code": "import types\nimport raglab.ingest.chunking as _ref\n\n"
    "_copy = types.FunctionType(_ref.chunk.__code__, _ref.chunk.__globals__)\n\n\n"
    + SIGNATURE
    + "):\n    return _copy(text, size, overlap)\n",
    "retry after refusal": "import raglab.ingest.chunking as _ref\n\n"
    + SIGNATURE
    + ", _chunk=_ref.chunk):\n    for _ in range(3):\n        try:\n"
    "            return _chunk(text, size, overlap)\n        except RuntimeError:\n"
    "            pass\n",
    "a thread pool made beforehand": "from concurrent.futures import ThreadPoolExecutor\n"
    "import raglab.ingest.chunking as _ref\n\n_pool = ThreadPoolExecutor(1)\n"
    "_pool.submit(len, '').result()  # its thread is running before any check\n\n\n"
    + SIGNATURE
    + ", _chunk=_ref.chunk):\n    return _pool.submit(_chunk, text, size, overlap).result()\n",
    "computed after it returns": "import raglab.ingest.chunking as _ref\n\n\n"
    "class _Later(list):\n    def __init__(self, call):\n        self.call = call\n\n"
    "    def __eq__(self, other):\n        return self.call() == other\n\n\n"
    + SIGNATURE
    + ", _chunk=_ref.chunk):\n    if size <= 0 or overlap < 0 or overlap >= size:\n"
    "        raise ValueError('size')\n"
    "    return _Later(lambda: _chunk(text, size, overlap))\n",
}


def captured_reference(tmp: Path) -> str:
    names = {}
    for number, (label, source) in enumerate(WRAPPERS.items()):
        names[f"w{number}"] = label
        save(with_chunk(source), tmp / "class" / f"w{number}" / CHUNKING)
    result, rows = grade(tmp / "class", "--jobs", "2", timeout=600)
    if problem := crashed(result):
        return problem
    if rows is None:
        return f"FAILED: no CSV ({result.stderr.strip()[-90:]})"
    passed = sorted(
        names[r["learner"]] for r in rows if r["exercise"] == "chunk" and r["passed"] == "true"
    )
    return (
        f"FAILED: the reference passed as the learner's chunk ({', '.join(passed)})"
        if passed
        else "held"
    )


# --- 13d processes that outlive grading ------------------------------------------------------------

SPAWN = """import os, subprocess, sys, time
PIDS = {pids!r}
def note(pid):
    with open(PIDS, "a") as file:
        file.write(f"{{pid}}\\n")
# detached: a new session
note(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True).pid)
# a double fork: the grandchild's parent exits at once
read, write = os.pipe()
if os.fork() == 0:
    os.setsid()
    child = os.fork()
    if child == 0:
        os.close(read)
        os.write(write, str(os.getpid()).encode())
        os.close(write)
        time.sleep(600)
    os._exit(0)
os.close(write)
note(int(os.read(read, 32).decode()))
# nohup in the background, through a shell
subprocess.run(f"nohup {{sys.executable}} -c 'import time; time.sleep(600)' >/dev/null 2>&1 & echo $! >> {{PIDS}}", shell=True)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def detached_processes(tmp: Path) -> str:
    pids = tmp / "pids.txt"
    nb = notebook(SOLVED)
    spawn = {"cell_type": "code", "id": "spawn", "metadata": {}, "outputs": []}
    nb["cells"].insert(
        2, {**spawn, "execution_count": None, "source": SPAWN.format(pids=str(pids))}
    )
    save(nb, tmp / "class" / "spawner" / CHUNKING)
    # Output to files: a process left running holds a pipe open, and a reader waits for it.
    with open(tmp / "out.txt", "w") as out:
        finished = subprocess.run(
            [sys.executable, "-m", "raglab", "grade", str(tmp / "class"), "--timeout", "30"],
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=300,
        )
    time.sleep(0.5)
    started = [int(p) for p in pids.read_text().split()] if pids.exists() else []
    left = [pid for pid in started if alive(pid)]
    for pid in left:  # leave the machine as it was
        os.kill(pid, signal.SIGKILL)
    if "Traceback" in (tmp / "out.txt").read_text(encoding="utf-8"):
        return f"FAILED: traceback (exit {finished.returncode})"
    if len(started) < 3:
        return (
            f"FAILED: the notebook started {len(started)} of 3 processes (the attack did not run)"
        )
    return f"FAILED: {len(left)} of {len(started)} processes outlived grading" if left else "held"


# --- 13e a learner folder named like a spreadsheet formula ----------------------------------------

FORMULAS = ("=1+2", '=HYPERLINK("http://evil.example","x")', "+1", "-1", "@SUM(1)", "\tx", "\rx")


def formula_folders(tmp: Path) -> str:
    for name in FORMULAS:
        save(notebook(ROOT / "exercises" / START), tmp / "class" / name / START)
    summary = tmp / "summary.csv"
    result, rows = grade(tmp / "class", "--summary-csv", str(summary))
    if problem := crashed(result):
        return problem
    if rows is None or not summary.exists():
        return "FAILED: no CSV written"
    cells = [value for row in rows for value in row.values()]
    cells += [
        value for row in csv.reader(summary.open(encoding="utf-8", newline="")) for value in row
    ]
    raw = sorted(
        {v for v in cells if len(v) > 1 and v.startswith(FORMULA_START)}
    )  # a lone - is text
    return f"FAILED: cells a spreadsheet evaluates: {raw[:3]}" if raw else "held"


# --- 13f raglab progress on malformed metadata --------------------------------------------------------


def progress_on_malformed(tmp: Path) -> str:
    folder = tmp / "mine"
    broken = notebook(STUB)
    cell(broken, "ex1-solution")["metadata"]["raglab"] = {"exercise": ["chunk"], "points": "2"}
    cell(broken, "ex1-check")["metadata"] = {"raglab": ["chunk"]}
    save(broken, folder / CHUNKING)
    save(
        notebook(ROOT / "exercises" / "05_implement_embeddings.ipynb"),
        folder / "05_implement_embeddings.ipynb",
    )
    result = run("progress", str(folder))
    if problem := crashed(result):
        return problem
    if CHUNKING not in result.stdout + result.stderr:
        return "FAILED: the message does not name the notebook"
    if "cosine" not in result.stdout:
        return "FAILED: the other notebooks' progress was lost"
    return "held"


# --- 13g names printed raw in the grading table and progress lines ------------------------------------


def raw_names(tmp: Path) -> str:
    forged = "x\x1b[2J\nraglab: warning: forged"
    save(notebook(ROOT / "exercises" / START), tmp / "class" / forged / START)
    graded, _ = grade(tmp / "class")
    mine = tmp / "mine"
    save(notebook(STUB), mine / "04_\x1b[31mred\u202e.ipynb")
    progress = run("progress", str(mine))
    problems = []
    for label, result in (("grade", graded), ("progress", progress)):
        if problem := crashed(result):
            return problem
        printed = result.stdout + result.stderr
        if "\x1b" in printed or "\u202e" in printed:
            problems.append(f"{label} printed an escape sequence")
        if any(line.startswith("raglab: warning: forged") for line in printed.splitlines()):
            problems.append(f"{label} printed a forged warning line")
    return f"FAILED: {'; '.join(problems)}" if problems else "held"


# --- neighbours ---------------------------------------------------------------------------------------


def copies_counted_twice(tmp: Path) -> str:
    for name in (CHUNKING, "04_implement_chunking (1).ipynb", "04_copy.ipynb"):
        save(notebook(SOLVED), tmp / "class" / "twice" / name)
    result, rows = grade(tmp / "class")
    if problem := crashed(result):
        return problem
    most = sum(int(r["max_points"]) for r in rows or [])
    got = sum(int(r["points"]) for r in rows or [])
    course = sum(COURSE_POINTS.values())
    if (got, most) != (course, course):
        return (
            f"FAILED: three copies of notebook 04 scored {got}/{most} "
            f"(the course holds {course} points)"
        )
    return "held"


def equal_to_everything(tmp: Path) -> str:
    source = (
        "class _Yes(list):\n    def __eq__(self, other):\n        return True\n\n"
        "    def __ne__(self, other):\n        return False\n\n\n"
        + SIGNATURE
        + "):\n    if size <= 0 or overlap < 0 or overlap >= size:\n        raise ValueError('size')\n"
        "    return _Yes()\n"
    )
    save(with_chunk(source), tmp / "class" / "yes" / CHUNKING)
    result, rows = grade(tmp / "class")
    if problem := crashed(result):
        return problem
    passed = [r for r in rows or [] if r["exercise"] == "chunk" and r["passed"] == "true"]
    return "FAILED: a list that equals everything passes chunk" if passed else "held"


ATTACKS = [
    ("13a one learner's malformed exercise metadata", malformed_metadata),
    ("13b a learner sets an exercise to 100 points", learner_sets_points),
    ("13c a wrapper capturing the reference (default arg, partial, ...)", captured_reference),
    ("13d processes a notebook detaches (new session, double fork, nohup)", detached_processes),
    ("13e learner folders named like spreadsheet formulas, in both CSVs", formula_folders),
    ("13f raglab progress on malformed metadata", progress_on_malformed),
    ("13g escape sequences in learner and notebook names (grade, progress)", raw_names),
    ("13h one notebook handed in three times", copies_counted_twice),
    ("13i a chunk result that equals everything", equal_to_everything),
]
