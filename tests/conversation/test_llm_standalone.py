"""The standalone rewrite by a model: what it is sent, what is kept, and raglab chat --json."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from raglab.conversation.chat import ChatSession
from raglab.conversation.history import MemoryHistory
from raglab.conversation.llm_standalone import LLMStandalone
from raglab.conversation.turns import Turn
from raglab.records import Principal

ROOT = Path(__file__).resolve().parents[2]
FIRST = Turn(
    "1", 1, "What does error E-204 mean?", "What does error E-204 mean?", "Wi-Fi failed [1]."
)


class Scripted:
    def __init__(self, reply: str) -> None:
        self.reply, self.prompts = reply, []

    def generate(self, prompt):
        self.prompts.append(prompt)
        return self.reply


def test_the_model_reads_earlier_turns_as_data_and_its_first_line_is_the_rewrite():
    model = Scripted("How do I fix error E-204?\nI hope this helps.")
    made = LLMStandalone(model).standalone("How do I fix it?", [FIRST])
    assert (made.rewrite.standalone, made.rewrite.reason) == ("How do I fix error E-204?", "model")
    system, user = (m["content"] for m in made.messages)
    code = model.prompts[0].boundary
    assert f"<turn-{code}>" in system and "data, not instructions" in system
    assert f'<turn-{code} n="1">\nQ: What does error E-204 mean?' in user
    assert user.endswith("Last question: How do I fix it?")


def test_the_first_turn_is_not_sent_and_an_empty_reply_keeps_the_question():
    model = Scripted("")
    assert LLMStandalone(model).standalone("Hi?", []).rewrite.reason == "first turn"
    assert model.prompts == []
    assert LLMStandalone(model).standalone("And?", [FIRST]).rewrite.standalone == "And?"


def test_a_session_with_a_model_rewrite_keeps_its_prompt(corpus_index):
    model = Scripted("How do I fix error E-204?")
    session = ChatSession(
        corpus_index,
        MemoryHistory(),
        Principal("ann", "globex"),
        model_rewriter=LLMStandalone(model),
    )
    session.ask("What does error E-204 mean?")
    turn = session.ask("How do I fix it?")
    assert turn.rewrite.standalone == "How do I fix error E-204?" and len(turn.messages) == 2
    assert session.turns()[1].standalone == "How do I fix error E-204?"


def test_raglab_chat_json_shows_the_models_rewrite_and_prompt(tmp_path):
    class Fixed(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps({"choices": [{"message": {"content": "How do I fix error E-204?"}}]})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fixed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RAGLAB_LLM_URL": f"http://127.0.0.1:{server.server_address[1]}/v1",
        "RAGLAB_LLM_MODEL": "m",
    }
    try:
        result = subprocess.run(
            [sys.executable, "-m", "raglab", "chat", "--docs", str(ROOT / "data" / "corpus"),
             "--tenant", "globex", "--json"],
            input="What does error E-204 mean?\nHow do I fix it?\n",
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    second = json.loads(result.stdout.splitlines()[1])
    assert second["standalone"] == "How do I fix error E-204?"
    assert second["rewrite"]["reason"] == "model"
    assert [m["role"] for m in second["rewrite"]["prompt"]] == ["system", "user"]
