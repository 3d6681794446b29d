"""The LLM client against a hostile server or a careless setting: one clear line, no secret.

Every failure is a `GenerationError` (or, for a bad setting, a `ValueError` at construction)
with one line that never shows the api key, in any form the server echoes it back in.
"""

from __future__ import annotations

import base64
import json
import quopri
from urllib.parse import quote

import pytest

from raglab.generate.openai_http import GenerationError, OpenAIChatGenerator
from raglab.generate.prompting import build_prompt
from raglab.records import Chunk, Hit
from tests.generate.test_openai_http import ask_through, server  # noqa: F401 (a fixture)

KEY = "sk-proj-Attack/0123+456789"
PROMPT = build_prompt(
    "How many days of leave?", [Hit(Chunk("hr/leave.md", 0, "Leave is 25 days.", 0, 17), 1.0)]
)


def reply(server, status: int, body: bytes) -> None:  # noqa: F811
    server.reply = (status, body, 0.0)


def failure(server, status: int, body: bytes, key: str | None = KEY) -> str:  # noqa: F811
    reply(server, status, body)
    with pytest.raises(GenerationError) as caught:
        OpenAIChatGenerator(server.url, "m", key).generate(PROMPT)
    message = str(caught.value)
    assert "\n" not in message
    return message


# --- replies no parser should choke on -----------------------------------------------------------


def test_deeply_nested_json_is_a_generation_error(server):  # noqa: F811
    body = b'{"choices": [{"message": {"content": "x"}}], "x": ' + b"[" * 100_000
    body += b"]" * 100_000 + b"}"
    assert "nested too deeply" in failure(server, 200, body)


def test_a_number_of_thousands_of_digits_in_the_json_is_a_generation_error(server):  # noqa: F811
    body = b'{"choices": [{"message": {"content": "25 days [1]."}}], "n": ' + b"9" * 5000 + b"}"
    assert "a number too long to read" in failure(server, 200, body)


def test_an_answer_cannot_send_terminal_commands(server):  # noqa: F811
    content = "Leave is 25 days [1].\x1b[2J\x1b]0;owned\x07\r\nDone\u202e [1]."
    reply(server, 200, json.dumps({"choices": [{"message": {"content": content}}]}).encode())
    answer = OpenAIChatGenerator(server.url, "m").generate(PROMPT)
    assert answer == "Leave is 25 days [1].[2J]0;owned\nDone [1]."


# --- the key, echoed back in any form -------------------------------------------------------------


def echoes(key: str) -> dict[str, str]:
    return {
        "as written": key,
        "upper case": key.upper(),
        "JSON, every character escaped": "".join(f"\\u{ord(c):04x}" for c in key),
        "JSON, slash escaped": key.replace("/", "\\/"),
        "URL-encoded": quote(key, safe=""),
        "URL-encoded, every byte": "".join(f"%{b:02X}" for b in key.encode()),
        "base64": base64.b64encode(key.encode()).decode(),
        "base64 of the header": base64.b64encode(f"Bearer {key}".encode()).decode(),
        "base64, URL alphabet": base64.urlsafe_b64encode(f"key={key}".encode()).decode(),
        "hex": key.encode().hex(),
        "HTML entities": "".join(f"&#{ord(c)};" for c in key),
        "quoted-printable": quopri.encodestring(key.encode(), quotetabs=True).decode(),
        "spread out": " ".join(key),
        "URL-encoded base64": quote(base64.b64encode(key.encode()).decode(), safe=""),
    }


@pytest.mark.parametrize("form", list(echoes(KEY)))
def test_the_key_echoed_in_an_error_body_is_never_printed(server, form):  # noqa: F811
    echoed = echoes(KEY)[form]
    body = json.dumps({"error": "invalid key"})[:-1].encode() + f', "echo": "{echoed}"}}'.encode()
    message = failure(server, 401, body)
    assert "HTTP 401" in message
    assert echoed not in message and KEY not in message


def test_the_key_in_an_answer_is_never_printed(server):  # noqa: F811
    content = f"Leave is 25 days [1]. (Authorization: Bearer {KEY})"
    reply(server, 200, json.dumps({"choices": [{"message": {"content": content}}]}).encode())
    answer = OpenAIChatGenerator(server.url, "m", KEY).generate(PROMPT)
    assert answer == "Leave is 25 days [1]. (Authorization: Bearer ***)"
    encoded = base64.b64encode(f"Bearer {KEY}".encode()).decode()
    content = json.dumps({"choices": [{"message": {"content": f"25 days [1]. {encoded}"}}]})
    assert "with the api key, encoded" in failure(server, 200, content.encode())


def test_an_answer_keeps_words_that_a_placeholder_key_spells(server):  # noqa: F811
    content = "Run it empty or on Ollama [1]."
    reply(server, 200, json.dumps({"choices": [{"message": {"content": content}}]}).encode())
    assert OpenAIChatGenerator(server.url, "m", "EMPTY").generate(PROMPT) == content
    assert OpenAIChatGenerator(server.url, "m", "ollama").generate(PROMPT) == content


def test_a_url_with_a_line_break_is_refused_before_it_can_forge_a_message():
    with pytest.raises(ValueError, match=r"whitespace or control characters"):
        OpenAIChatGenerator("http://127.0.0.1:9/v1\nraglab: warning: forged", "m")


def test_an_error_body_without_the_key_is_still_shown(server):  # noqa: F811
    assert "model 'm' not found" in failure(server, 404, b'{"error": "model \'m\' not found"}')


# --- settings that would leak or break --------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "hidden"),
    [
        ("http://user:hunter2@127.0.0.1:11434/v1", "hunter2"),
        ("http://sk-secret-token@127.0.0.1:11434/v1", "sk-secret-token"),
        ("https://api.example/v1?key=sk-secret-123", "sk-secret-123"),
        ("https://api.example/v1?api-version=2024-06-01&api_key=sk-secret-123", "sk-secret-123"),
        ("https://api.example/v1#sk-secret-123", "sk-secret-123"),
    ],
)
def test_a_credential_in_the_url_is_refused_without_being_shown(url, hidden):
    with pytest.raises(ValueError, match=r"RAGLAB_API_KEY") as caught:
        OpenAIChatGenerator(url, "m")
    assert hidden not in str(caught.value)


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), -float("inf"), 1e12])
def test_an_absurd_timeout_is_refused_when_the_client_is_made(timeout):
    with pytest.raises(ValueError, match=r"^timeout must be a finite number from 0.001 to 3600"):
        OpenAIChatGenerator("http://127.0.0.1:9/v1", "m", timeout=timeout)


@pytest.mark.parametrize("timeout", ["60", True, None])
def test_a_timeout_that_is_no_number_is_refused(timeout):
    with pytest.raises(TypeError, match=r"^timeout must be a finite number"):
        OpenAIChatGenerator("http://127.0.0.1:9/v1", "m", timeout=timeout)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e12"])
def test_the_cli_refuses_an_absurd_llm_timeout_in_one_line(value, capsys):
    code = ask_through("http://127.0.0.1:9/v1", "--llm-timeout", value)
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("raglab: error: timeout must be a finite number from 0.001 to 3600")
    assert len(err.strip().splitlines()) == 1


def test_the_cli_refuses_a_password_in_the_llm_url_and_names_the_variable(capsys):
    code = ask_through("http://me:hunter2@127.0.0.1:9/v1")
    err = capsys.readouterr().err
    assert code == 1 and "RAGLAB_API_KEY" in err and "hunter2" not in err
