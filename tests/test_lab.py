"""`make lab` as a learner meets it: it installs what every notebook uses, and the link it
prints opens exercises/00_start_here.ipynb, not the Launcher.

The commands come from the Makefile itself (`make -n lab`, which prints them and runs
nothing): the extras its install line names are installed from the wheel into a fresh
venv (the wheelhouse of tests/test_packaging.py), and the server starts with the lab
target's own line, in the checkout, on a free port and without a browser. Then the test
follows the link the server printed, as someone on a remote machine would.
"""

from __future__ import annotations

import json
import queue
import re
import shlex
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from tests.test_packaging import clean_env, dist, offline, run, wheel  # noqa: F401 (fixtures)

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parent.parent
START = "exercises/00_start_here.ipynb"
EXTRAS = re.compile(r'pip install .*-e "\.\[([\w,]+)\]"')
PRINTED_LINK = re.compile(r"(http://(?:localhost|127\.0\.0\.1):\d+/\S*\?token=\w+)")
MODULE = re.compile(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)|find_spec\(\"([A-Za-z_]\w*)\"\)", re.M)
SERVER_START = 120  # seconds a fresh JupyterLab may take to print its link


def lab_recipe(venv_root: Path) -> list[str]:
    """The lines `make lab` would run with its environment at `venv_root` (none is run)."""
    printed = subprocess.run(
        ["make", "--no-print-directory", "-n", "lab", f"LAB_VENV={venv_root}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return printed.stdout.splitlines()


def notebook_modules() -> set[str]:
    """The top-level modules the notebooks import (or look for with find_spec), outside the
    standard library and raglab."""
    found: set[str] = set()
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                found |= {a or b for a, b in MODULE.findall(cell.source)}
    return {m for m in found if m not in sys.stdlib_module_names and m != "raglab"}


@pytest.fixture(scope="module")
def lab_venv(wheel: Path, tmp_path_factory) -> Path:  # noqa: F811 (the fixture imported above)
    """A fresh venv with the wheel and the extras `make lab` installs; its root."""
    root = tmp_path_factory.mktemp("lab") / "venv"
    (extras,) = [m[1] for line in lab_recipe(root) if (m := EXTRAS.search(line))]
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root], check=True)
    wanted = f"{wheel}[{extras}]"
    install = [sys.executable, "-m", "pip", "--python", root / "bin" / "python", "install"]
    offline([*install, "--quiet", "--no-compile", wanted], cwd=root, needs=[wanted])
    return root


def test_the_lab_installs_every_module_the_notebooks_use(lab_venv: Path):
    modules = notebook_modules()
    assert {"matplotlib", "ipywidgets", "qdrant_client"} <= modules  # the scan finds them
    script = (
        "import importlib.util, json, sys; "
        "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]))"
    )
    result = run([lab_venv / "bin" / "python", "-c", script, *sorted(modules)], cwd=lab_venv)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def lines_of(stream) -> queue.Queue:
    """The lines of `stream`, read in a thread, so that waiting for one can time out."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    return lines


@pytest.fixture(scope="module")
def printed_link(lab_venv: Path) -> Iterator[str]:
    """The link the lab target's server prints, started with that very line."""
    (command,) = [line for line in lab_recipe(lab_venv) if " lab " in f"{line} "]
    args = [*shlex.split(command), "--no-browser", f"--ServerApp.port={free_port()}"]
    server = subprocess.Popen(
        args,
        cwd=ROOT,
        env=clean_env(),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines, deadline, seen, found = (
            lines_of(server.stderr),
            time.monotonic() + SERVER_START,
            [],
            None,
        )
        while found is None and time.monotonic() < deadline:
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                continue
            found = PRINTED_LINK.search(seen[-1])
        assert found, "the server printed no link:\n" + "".join(seen[-20:])
        yield found[1]
    finally:
        server.terminate()
        server.wait(timeout=30)


def opened(url: str):
    """`urlopen(url)`, again while the connection is refused: the server prints its link a
    moment before it listens."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return urllib.request.urlopen(url, timeout=30)
        except urllib.error.URLError as error:
            if not isinstance(error.reason, ConnectionRefusedError) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_the_printed_link_lands_on_the_start_notebook(printed_link: str):
    url = urllib.parse.urlsplit(printed_link)
    assert url.path == f"/lab/tree/{START}"
    with opened(printed_link) as page:
        assert page.status == 200
        assert page.geturl() == printed_link  # no redirect to the Launcher
        html = page.read().decode("utf-8")
    assert f'"treePath": "{START}"' in html  # what JupyterLab opens in the page it serves
    token = urllib.parse.parse_qs(url.query)["token"][0]
    contents = f"{url.scheme}://{url.netloc}/api/contents/{START}?content=0&token={token}"
    with opened(contents) as reply:
        assert json.loads(reply.read())["type"] == "notebook"  # the file is there, in the root
