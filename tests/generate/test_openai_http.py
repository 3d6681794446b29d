"""The OpenAI-compatible client, against loopback servers started by the tests."""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from raglab.generate.openai_http import GenerationError, OpenAIChatGenerator
from raglab.generate.prompting import build_prompt
from raglab.records import Chunk, Hit

# --- the OpenAI-compatible generator, against a local test server ------------------------


class FakeServer:
    """A chat-completions server on 127.0.0.1 (port 0) that records requests and replays
    one canned reply: (status, body bytes, delay in seconds)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.reply: tuple[int, bytes, float] = (200, b"{}", 0.0)
        self.drop = False  # close the connection without any reply
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's naming
                body = self.rfile.read(int(self.headers["Content-Length"]))
                server.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                status, payload, delay = server.reply
                time.sleep(delay)
                if server.drop:
                    self.close_connection = True
                    return
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the timeout test)

            def log_message(self, *args) -> None:  # keep test output quiet
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        # A short poll interval: shutdown() waits for the next poll (0.5 s by default).
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True)

    def answer(self, content: str) -> None:
        self.reply = (
            200,
            json.dumps(
                {"choices": [{"message": {"role": "assistant", "content": content}}]}
            ).encode(),
            0.0,
        )


@pytest.fixture
def server():
    fake = FakeServer()
    fake.thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


PROMPT = build_prompt(
    "How many days of leave?", [Hit(Chunk("hr/leave.md", 0, "Leave is 25 days.", 0, 17), 1.0)]
)


def test_request_body_and_answer(server):
    server.answer("  Leave is 25 days [1].\n")
    text = OpenAIChatGenerator(server.url + "/", "llama3.2", temperature=0.2).generate(PROMPT)
    assert text == "Leave is 25 days [1]."
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Content-Type"] == "application/json"
    body = json.loads(request["body"])
    assert body["model"] == "llama3.2"
    assert body["messages"] == PROMPT.messages()
    assert body["temperature"] == 0.2
    assert body["stream"] is False


def test_default_temperature_is_zero(server):
    server.answer("ok")
    OpenAIChatGenerator(server.url, "m").generate(PROMPT)
    assert json.loads(server.requests[0]["body"])["temperature"] == 0.0


def test_auth_header_only_when_a_key_is_given(server):
    server.answer("ok")
    OpenAIChatGenerator(server.url, "m", "sk-test-123").generate(PROMPT)
    OpenAIChatGenerator(server.url, "m").generate(PROMPT)
    with_key, without_key = (r["headers"] for r in server.requests)
    assert with_key["Authorization"] == "Bearer sk-test-123"
    assert "Authorization" not in without_key


def test_http_error_names_url_and_status_and_hides_the_key(server):
    # A server that echoes the request back must not leak the key into the message.
    server.reply = (500, b'{"error": "boom", "echo": "Bearer sk-secret-9"}', 0.0)
    with pytest.raises(
        GenerationError, match=r"/v1/chat/completions answered HTTP 500: .*boom"
    ) as caught:
        OpenAIChatGenerator(server.url, "m", "sk-secret-9").generate(PROMPT)
    assert server.url in str(caught.value)
    assert "sk-secret-9" not in str(caught.value)


def test_non_json_reply(server):
    server.reply = (200, b"<html>proxy login</html>", 0.0)
    with pytest.raises(
        GenerationError, match=r"answered HTTP 200 but not with JSON: <html>proxy login</html>"
    ):
        OpenAIChatGenerator(server.url, "m").generate(PROMPT)


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"choices": []},
        {"choices": [{"message": {}}]},
        {"choices": [{"message": {"content": None}}]},
        [1, 2],
    ],
)
def test_unexpected_json_reply(server, payload):
    server.reply = (200, json.dumps(payload).encode(), 0.0)
    with pytest.raises(GenerationError, match=r"without a choices\[0\]\.message\.content string"):
        OpenAIChatGenerator(server.url, "m").generate(PROMPT)


def test_timeout(server):
    server.answer("too late")
    server.reply = (*server.reply[:2], 0.5)
    started = time.perf_counter()
    with pytest.raises(GenerationError, match=r"no answer within timeout=0.05 s"):
        OpenAIChatGenerator(server.url, "m", timeout=0.05).generate(PROMPT)
    assert time.perf_counter() - started < 0.45


def test_unreachable_server():
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(
        GenerationError, match=rf"could not reach http://127.0.0.1:{port}/v1/chat/completions"
    ):
        OpenAIChatGenerator(f"http://127.0.0.1:{port}/v1", "m", "sk-x", timeout=2).generate(PROMPT)


def test_repr_hides_the_key():
    generator = OpenAIChatGenerator("http://localhost:11434/v1", "llama3.2", "sk-secret")
    assert "sk-secret" not in repr(generator)
    assert "llama3.2" in repr(generator)


@pytest.mark.parametrize(
    ("args", "options", "message"),
    [
        (
            ("localhost:11434/v1", "m"),
            {},
            r"base_url must start with http:// or https:// \(got base_url='localhost:11434/v1'\)",
        ),
        (("http://x/v1", ""), {}, "model must not be empty"),
        (
            ("http://x/v1", "m"),
            {"timeout": 0},
            r"timeout must be a finite number from 0.001 to 3600 \(got timeout=0\)",
        ),
    ],
)
def test_openai_options_are_validated(args, options, message):
    with pytest.raises(ValueError, match=message):
        OpenAIChatGenerator(*args, **options)


def test_timeout_and_temperature_are_keyword_only():
    with pytest.raises(TypeError):
        OpenAIChatGenerator("http://x/v1", "m", None, 5.0)  # type: ignore[misc]


def test_connection_dropped_mid_answer(server):
    server.reply = (200, b"", 0.0)
    server.drop = True
    with pytest.raises(
        GenerationError, match=r"connection to http://127.0.0.1:\d+/v1/chat/completions failed"
    ):
        OpenAIChatGenerator(server.url, "m").generate(PROMPT)


# --- attacks: redirects, keys, slow and broken servers -----------------------------------


class Loopback:
    """A server on 127.0.0.1 whose POST handler is `respond(handler)`; it records every
    request's path and headers, GETs included."""

    def __init__(self, respond) -> None:
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # http.server's naming
                self.rfile.read(int(self.headers["Content-Length"]))
                server.requests.append({"path": self.path, "headers": dict(self.headers)})
                try:
                    respond(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, as it should

            def do_GET(self) -> None:  # what a client following a 301-303 redirect sends
                server.requests.append({"path": self.path, "headers": dict(self.headers)})
                send(self, b"{}", status=405)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def loopback():
    started: list[Loopback] = []

    def start(respond) -> Loopback:
        started.append(Loopback(respond))
        return started[-1]

    yield start
    for server in started:
        server.close()


def head(handler, status: int, headers: dict[str, str]) -> None:
    handler.send_response(status)
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()


def chat_reply(content: str) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}}]}).encode()


def send(handler, payload: bytes, status: int = 200) -> None:
    head(handler, status, {"Content-Type": "application/json", "Content-Length": str(len(payload))})
    handler.wfile.write(payload)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("same_origin", [False, True])
def test_a_redirect_is_refused_and_the_key_never_reaches_its_target(loopback, status, same_origin):
    target = loopback(lambda h: send(h, chat_reply("from the other server [1].")))
    where = [None]

    def redirect(h) -> None:
        head(h, status, {"Location": where[0], "Content-Length": "0"})

    first = loopback(redirect)
    where[0] = (first.url + "/elsewhere") if same_origin else (target.url + "/chat/completions")
    with pytest.raises(GenerationError, match=rf"answered HTTP {status} \(a redirect\)") as caught:
        OpenAIChatGenerator(first.url, "m", "sk-secret-7").generate(PROMPT)
    assert "sk-secret-7" not in str(caught.value)
    assert target.requests == []  # nothing, let alone the key, went to the redirect's target
    assert len(first.requests) == 1  # and the first server was not asked again either


@pytest.mark.parametrize(
    "key",
    [
        "sk-a\r\nX-Evil: 1",
        "sk-a\nb",
        "sk a",
        "sk\ta",
        "sk-a\x00",
        "sk-\x7f",
        "sk-\u2028a",
        "sk-\u00e9",
    ],
)
def test_a_key_with_whitespace_or_control_characters_is_refused_unprinted(key):
    with pytest.raises(ValueError, match=r"api_key must be printable ASCII") as caught:
        OpenAIChatGenerator("http://127.0.0.1:1/v1", "m", key)
    assert key not in str(caught.value) and key.strip() not in str(caught.value)
    assert "sk-" not in str(caught.value)


def drip(body_first: bool):
    """A server that sends one byte every 0.2 s: its headers, or a body of 200 bytes."""

    def respond(h) -> None:
        if body_first:
            payload = chat_reply("x" * 150)
            head(h, 200, {"Content-Type": "application/json", "Content-Length": str(len(payload))})
            h.wfile.flush()
        else:
            payload = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" * 10
        for byte in payload[:60]:
            h.wfile.write(bytes([byte]))
            h.wfile.flush()
            time.sleep(0.2)

    return respond


@pytest.mark.parametrize("body_first", [True, False], ids=["dripped-body", "dripped-headers"])
def test_a_dripping_server_cannot_hold_a_request_past_its_deadline(loopback, body_first):
    server = loopback(drip(body_first))
    started = time.monotonic()
    with pytest.raises(GenerationError, match=r"no answer within timeout=1.0 s"):
        OpenAIChatGenerator(server.url, "m", timeout=1.0).generate(PROMPT)
    assert time.monotonic() - started < 1.0 + 0.5


def test_a_reply_declared_larger_than_the_cap_is_refused_unread(loopback):
    def huge(h) -> None:
        head(h, 200, {"Content-Type": "application/json", "Content-Length": str(10**12)})
        h.wfile.write(b"{" * 1000)

    server = loopback(huge)
    with pytest.raises(GenerationError, match=r"a reply larger than max_bytes=4096"):
        OpenAIChatGenerator(server.url, "m", max_bytes=4096).generate(PROMPT)


def test_a_reply_growing_past_the_cap_is_cut_off(loopback):
    def endless(h) -> None:  # no Content-Length: the body ends when the connection closes
        head(h, 200, {"Content-Type": "application/json", "Connection": "close"})
        for _ in range(100):
            h.wfile.write(b" " * 1024)

    server = loopback(endless)
    with pytest.raises(GenerationError, match=r"a reply larger than max_bytes=4096"):
        OpenAIChatGenerator(server.url, "m", max_bytes=4096).generate(PROMPT)


def test_a_truncated_body_is_a_clear_error(loopback):
    def truncated(h) -> None:
        payload = chat_reply("Leave is 25 days [1].")
        head(
            h, 200, {"Content-Type": "application/json", "Content-Length": str(len(payload) + 500)}
        )
        h.wfile.write(payload)
        h.close_connection = True

    server = loopback(truncated)
    with pytest.raises(GenerationError, match=r"truncated reply: \d+ of \d+ bytes"):
        OpenAIChatGenerator(server.url, "m").generate(PROMPT)


@pytest.mark.parametrize("content", ["", "   \n "])
def test_an_empty_answer_is_an_error(loopback, content):
    server = loopback(lambda h: send(h, chat_reply(content)))
    with pytest.raises(GenerationError, match=r"answered HTTP 200 with an empty answer"):
        OpenAIChatGenerator(server.url, "m").generate(PROMPT)


def ask_through(url: str, *options: str) -> int:
    """`raglab ask` about the sample corpus, generated by the server at `url`."""
    from raglab.cli import main
    from raglab.samples import sample_corpus

    question = ["ask", "How many days of leave?", "--docs", str(sample_corpus())]
    return main([*question, "--tenant", "acme", "--llm-url", url, "--llm-model", "m", *options])


def test_the_cli_prints_a_server_failure_as_one_line(loopback, capsys):
    server = loopback(
        lambda h: head(h, 302, {"Location": "http://127.0.0.1:1/", "Content-Length": "0"})
    )
    code = ask_through(server.url)
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("raglab: error: ") and "redirect" in err and "Traceback" not in err


def test_a_tls_handshake_dripped_byte_by_byte_ends_at_the_deadline():
    """An https server that answers the handshake with a slow trickle of one big record."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = listener.accept()
        with conn:
            for byte in b"\x16\x03\x03\x40\x00" + b"\x00" * 50:  # a 16 KiB handshake record
                if stop.wait(0.2):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    threading.Thread(target=trickle, daemon=True).start()
    started = time.monotonic()
    try:
        with pytest.raises(GenerationError, match=r"no answer within timeout=1.0 s"):
            url = f"https://127.0.0.1:{listener.getsockname()[1]}/v1"
            OpenAIChatGenerator(url, "m", "sk-x", timeout=1.0).generate(PROMPT)
        assert time.monotonic() - started < 1.0 + 0.5
    finally:
        stop.set()
        listener.close()


def test_the_cli_deadline_is_set_with_llm_timeout(loopback, capsys):
    server = loopback(drip(body_first=True))
    started = time.monotonic()
    code = ask_through(server.url, "--llm-timeout", "1")
    err = capsys.readouterr().err
    assert code == 1 and "no answer within timeout=1.0 s" in err
    # Without the deadline the drip lasts 12 s; the slack covers indexing the sample corpus.
    assert time.monotonic() - started < 9.0
