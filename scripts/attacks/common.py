"""What every attack needs: the `raglab` command in a subprocess, a corpus in a folder, a
server on loopback that answers like an LLM (or not)."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import raglab

ROOT = Path(raglab.__file__).resolve().parent.parent  # the checkout under attack
CORPUS = ROOT / "data" / "corpus"
QUESTIONS = ROOT / "data" / "questions.jsonl"
KEY = "sk-attack-0123456789"


def run(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "raglab", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def traceback_in(result: subprocess.CompletedProcess) -> bool:
    return "Traceback (most recent call last)" in result.stderr


def corpus_with(tmp: Path, files: dict[str, str]) -> Path:
    folder = tmp / "corpus"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


OUTSIDERS = {"no group": [], "hr": ["--groups", "hr"]}
"""acme users outside board, as `raglab ask` options: what a [board] document must not move."""


def board_document_moves(
    tmp: Path,
    board_document: str,
    seen: Callable[[list[str], list[str]], Any],
    index_options: tuple[str, ...] = (),
) -> tuple[list[str], dict[Path, Path]]:
    """The sample corpus twice, once with `board_document` as acme/board-minutes.md, each
    asked in memory (`--docs`) and from an index file; `seen(where, groups)` is what an
    outsider gets. Returns the "store, user" pairs whose view the document moved, and each
    copy's index file (plain first)."""
    plain, with_board = tmp / "plain", tmp / "with_board"
    for folder in (plain, with_board):
        shutil.copytree(CORPUS, folder)
    (with_board / "acme" / "board-minutes.md").write_text(board_document, encoding="utf-8")
    where: dict[str, dict[Path, list[str]]] = {"memory": {}, "sqlite": {}}
    indexes = {}
    for folder in (plain, with_board):
        indexes[folder] = tmp / f"{folder.name}.sqlite"
        built = run("index", str(folder), "--index", str(indexes[folder]), *index_options)
        if built.returncode != 0:
            raise RuntimeError(f"raglab index: {built.stderr.strip()[-100:]}")
        where["memory"][folder] = ["--docs", str(folder), *index_options]
        where["sqlite"][folder] = ["--index", str(indexes[folder])]
    moved = [
        f"{store}, {user}"
        for store, options in where.items()
        for user, groups in OUTSIDERS.items()
        if seen(options[plain], groups) != seen(options[with_board], groups)
    ]
    return moved, indexes


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def serve(handler: type[http.server.BaseHTTPRequestHandler]) -> tuple[Server, str]:
    server = Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def quiet(handler: type) -> type:
    handler.log_message = lambda *args: None
    return handler


def answer_body(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}}]}).encode()


def llm_answer(url: str, key: str | None = KEY, timeout: float = 5.0) -> tuple[str, str]:
    """('ok', answer text) or ('error', message) or ('crash', traceback)."""
    deadline = (
        ["--llm-timeout", str(timeout)] if "--llm-timeout" in run("ask", "--help").stdout else []
    )
    result = run(
        "ask",
        "How many vacation days do I get?",
        "--docs",
        str(CORPUS),
        "--tenant",
        "acme",
        "--llm-url",
        url,
        "--llm-model",
        "m",
        "--json",
        *deadline,
        timeout=60,
        env={**os.environ, "RAGLAB_API_KEY": key or ""},
    )
    if traceback_in(result):
        return "crash", result.stderr.strip().splitlines()[-1]
    if result.returncode != 0:
        return "error", result.stderr.strip()
    return "ok", result.stdout


def fixed_server(status: int, body: bytes, length: int | None = None) -> tuple[Server, str]:
    """A server that reads the whole request, then sends `body` (its Content-Length says
    `length` when given, to lie about it), so the client is never cut off mid-request, which
    would hide what its parser does with the body."""

    @quiet
    class Fixed(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body) if length is None else length))
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client hung up on a body too large for it: what the attack wants

    return serve(Fixed)


def answer_from(status: int, body: bytes, length: int | None = None) -> tuple[str, str]:
    """`llm_answer` from a `fixed_server` sending `body`, stopped afterwards."""
    server, url = fixed_server(status, body, length)
    try:
        return llm_answer(url)
    finally:
        server.shutdown()
