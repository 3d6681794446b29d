"""The loop driven by a model through the JSON protocol, against a scripted local server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from raglab.agent.loop import run_agent
from raglab.agent.model_planner import ModelPlanner, ProtocolError, parse_action
from raglab.generate.openai_http import OpenAIChatGenerator
from raglab.records import Principal

GLOBEX = Principal("gus", "globex")


class ScriptedServer:
    """A chat-completions server on 127.0.0.1 that gives its replies in order, the last
    one again once they run out, and records what it was sent."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.sent = list(replies), []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.sent.append(body["messages"])
                content = server.replies.pop(0) if len(server.replies) > 1 else server.replies[0]
                payload = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedServer:
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def model(url: str) -> OpenAIChatGenerator:
    return OpenAIChatGenerator(url, "scripted", timeout=10)


def test_the_model_searches_twice_then_stops_and_the_transcript_shows_it(corpus_index):
    replies = [
        '{"tool": "search", "query": "error E-101 fix", "k": 3}',
        '```json\n{"tool": "keyword", "query": "GX-PA24 warranty", "k": 3}\n```',
        '{"tool": "stop", "why": "the warranty table names the GX-PA24"}',
        "The GX-PA24 has a 1 year warranty [4].",  # the answer, from the same model
    ]
    with ScriptedServer(replies) as server:
        planner = ModelPlanner(model(server.url))
        run = run_agent("Warranty of the E-101 part?", corpus_index, GLOBEX, planner=planner,
                        generator=model(server.url))  # fmt: skip
    assert [s.action.tool for s in run.steps] == ["search", "keyword"]
    assert run.stop_reason == "the warranty table names the GX-PA24"
    assert "globex/policies/warranty.md" in run.steps[1].found
    assert len(run.transcript) == 6 and run.transcript[-1].endswith('GX-PA24"}')
    # the second turn shows the model what the first search found, as data blocks
    second_turn = server.sent[1][1]["content"]
    assert "Step 1: search 'error E-101 fix'" in second_turn and "<source-" in second_turn
    assert run.answer.text.startswith("The GX-PA24 has a 1 year warranty")


def test_a_model_that_asks_for_another_tenants_document_gets_nothing(corpus_index):
    replies = [
        '{"tool": "read", "doc_id": "acme/hr/salary-bands.md"}',
        '{"tool": "read", "doc_id": "acme/hr/salary-bands.md", "tenant": "acme", "groups": ["hr"]}',
    ]
    with ScriptedServer(replies) as server:
        run = run_agent(
            "Salary bands?", corpus_index, GLOBEX, planner=ModelPlanner(model(server.url))
        )
    assert run.steps[0].hits == () and run.retrieved == ()
    assert run.stop_reason.startswith("the model's reply was refused: unknown key 'groups'")
    assert run.answer.abstained


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("I think we should search.", "no JSON object"),
        ('{"tool": "delete"}', "unknown tool 'delete'"),
        ('{"tool": "search", "query": ""}', "search needs a query"),
        ('{"tool": "search", "query": "x", "k": 500}', "k must be a whole number from 1 to 20"),
        ('{"tool": "read", "doc_id": 7}', "must be strings"),
        ('{"tool": "search", "query": "x", "principal": "admin"}', "unknown key 'principal'"),
    ],
)
def test_replies_outside_the_protocol_are_refused(reply, message):
    with pytest.raises(ProtocolError, match=message):
        parse_action(reply)
