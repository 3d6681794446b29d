"""A real model over HTTP: any server that speaks OpenAI's `/chat/completions` protocol.

Ollama, llama.cpp's server, vLLM and OpenAI itself all do. The client is the standard
library's `http.client`, because a client that carries an api key must decide for itself
what to trust:

- **No redirects.** `http.client` never follows one, and neither does this client: a 3xx
  reply is an error. A redirect would send the key (and the prompt) to an address the
  user never chose, on any origin, so the user must set `base_url` to the final address.
- **The key is checked and never shown.** A key with whitespace or control characters
  could add a header line; it is refused, and no message, `repr` or error prints it.
- **One deadline per request** (`timeout`, seconds, measured on a monotonic clock): it
  bounds connecting, the headers and the body together. The body is read in small reads,
  each allowed only the time left; a watchdog closes the socket at the deadline, so a
  server that drips one byte a second cannot hold a request past it.
- **A cap on the reply** (`max_bytes`): a server cannot fill the memory.
- **Every failure is a `GenerationError`** with one clear line (HTTP status, timeout,
  truncated body, not JSON, no answer text, an empty answer), which the CLI prints as is.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from raglab.generate.prompting import Prompt
from raglab.validation import check_int, check_number

if TYPE_CHECKING:  # for the annotations only: http.client is imported when a request is made
    import socket
    from http.client import HTTPConnection, HTTPResponse

__all__ = ["GenerationError", "OpenAIChatGenerator"]

READ_SIZE = 8192
"""Bytes asked for in one read of the body: small, so the deadline is checked often."""

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
"""4 MiB: a chat completion is a few kilobytes; anything near this is not one."""


class GenerationError(RuntimeError):
    """The model server could not be reached or did not answer as expected."""


def check_api_key(key: str | None) -> None:
    """Refuse a key that could change the request's headers. The message never shows it.

    >>> check_api_key("sk-abc123")
    >>> check_api_key("sk-abc\\r\\nX-Evil: 1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: api_key must be printable ASCII without whitespace or control characters (...)
    """
    if key and not (key.isascii() and key.isprintable() and not any(c.isspace() for c in key)):
        raise ValueError(
            "api_key must be printable ASCII without whitespace or control characters "
            "(the key is not shown)"
        )


@dataclass(frozen=True, slots=True)
class OpenAIChatGenerator:
    """A model behind an OpenAI-compatible `/chat/completions` endpoint (stdlib only).

    `base_url` is the API root, e.g. `http://localhost:11434/v1` (Ollama),
    `http://localhost:8080/v1` (llama.cpp server), `http://localhost:8000/v1` (vLLM) or
    `https://api.openai.com/v1`. The api key is sent as `Authorization: Bearer ...` only
    when given; it is hidden from `repr` and never appears in an error message.
    `timeout`: seconds for the whole request, from connecting to the last byte.
    `max_bytes`: the largest reply accepted.
    """

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout: float = field(default=60.0, kw_only=True)
    temperature: float = field(default=0.0, kw_only=True)
    max_bytes: int = field(default=DEFAULT_MAX_BYTES, kw_only=True)

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"base_url must start with http:// or https:// (got base_url={self.base_url!r})"
            )
        if not self.model:
            raise ValueError("model must not be empty (got model='')")
        check_number("timeout", self.timeout, above=0)  # seconds
        check_number("temperature", self.temperature, minimum=0, maximum=2)  # OpenAI's range
        check_int("max_bytes", self.max_bytes, minimum=1)
        check_api_key(self.api_key)
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def generate(self, prompt: Prompt) -> str:
        body = {
            "model": self.model,
            "messages": prompt.messages(),
            "temperature": self.temperature,
            "stream": False,
        }
        status, text = self._post(json.dumps(body).encode("utf-8"))
        return self._content(status, text)

    # --- one request, within one deadline -----------------------------------------------

    def _post(self, data: bytes) -> tuple[int, str]:
        """POST `data` within one deadline; the status and the body text, or GenerationError."""
        import http.client  # here, not at the top: only a real model needs it

        deadline = time.monotonic() + self.timeout
        parts = urlsplit(self.url)
        https = parts.scheme == "https"
        try:
            connection = (http.client.HTTPSConnection if https else http.client.HTTPConnection)(
                parts.netloc, timeout=self.timeout
            )
        except http.client.InvalidURL as error:
            raise GenerationError(f"could not reach {self.url}: {self._hide(str(error))}") from None
        # kept: http.client drops its reference to the socket once the reply is read
        sockets: list[socket.socket] = []
        watchdog = threading.Timer(self.timeout, _shut, args=(connection, sockets))
        watchdog.daemon = True
        watchdog.start()
        try:
            self._connect(connection, deadline)
            sockets.append(connection.sock)
            connection.request("POST", parts.path, body=data, headers=self._headers())
            response = connection.getresponse()
            body = self._read(response, sockets[0], deadline)
        except (OSError, http.client.HTTPException) as error:  # reset, cut, or the watchdog
            if time.monotonic() >= deadline:
                raise GenerationError(self._timed_out()) from None
            reason = self._hide(str(error) or type(error).__name__)
            raise GenerationError(f"connection to {self.url} failed: {reason}") from None
        finally:
            watchdog.cancel()
            connection.close()
        return self._checked(response, body)

    def _connect(self, connection: HTTPConnection, deadline: float) -> None:
        """Open the connection (TCP, then TLS for https), or GenerationError."""
        import http.client

        try:
            connection.connect()
        except (OSError, http.client.HTTPException) as error:  # refused, no route, bad host
            if time.monotonic() >= deadline:
                raise GenerationError(self._timed_out()) from None
            raise GenerationError(f"could not reach {self.url}: {self._hide(str(error))}") from None

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _read(self, response: HTTPResponse, sock: socket.socket, deadline: float) -> bytes:
        """The body, in small reads, each given only the time left; capped at max_bytes."""
        declared = response.getheader("Content-Length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            raise GenerationError(self._too_large())
        parts, size = [], 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise GenerationError(self._timed_out())
            sock.settimeout(left)  # subtle: a socket timeout bounds one read, not the total
            part = response.read1(READ_SIZE)
            if not part:
                break
            size += len(part)
            if size > self.max_bytes:
                raise GenerationError(self._too_large())
            parts.append(part)
        if time.monotonic() >= deadline:  # the watchdog closed the socket mid-body
            raise GenerationError(self._timed_out())
        if declared and declared.isdigit() and size < int(declared):
            raise GenerationError(
                f"{self.url} sent a truncated reply: {size} of {declared} bytes "
                "(the connection closed early)"
            )
        return b"".join(parts)

    def _checked(self, response: HTTPResponse, body: bytes) -> tuple[int, str]:
        """The status and text of a 2xx reply; any other status is a GenerationError."""
        text = body.decode("utf-8", errors="replace")
        if 300 <= response.status < 400:
            raise GenerationError(
                f"{self.url} answered HTTP {response.status} (a redirect); raglab never follows "
                "a redirect, since it would carry the api key elsewhere: set the final address "
                "as the server url"
            )
        if not 200 <= response.status < 300:
            raise GenerationError(
                f"{self.url} answered HTTP {response.status}: {self._snippet(text)}"
            )
        return response.status, text

    # --- the answer out of the reply ------------------------------------------------------

    def _content(self, status: int, text: str) -> str:
        """The answer text out of a chat-completions response body."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise GenerationError(
                f"{self.url} answered HTTP {status} but not with JSON: {self._snippet(text)}"
            ) from None
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise GenerationError(
                f"{self.url} answered HTTP {status} without a choices[0].message.content string: "
                f"{self._snippet(text)}"
            )
        if not content.strip():  # an empty answer is a failure, never an answer
            raise GenerationError(f"{self.url} answered HTTP {status} with an empty answer")
        return content.strip()

    # --- error messages -------------------------------------------------------------------

    def _timed_out(self) -> str:
        return f"{self.url}: no answer within timeout={self.timeout} s (for the whole request)"

    def _too_large(self) -> str:
        return f"{self.url} sent a reply larger than max_bytes={self.max_bytes}"

    def _hide(self, text: str) -> str:
        return text.replace(self.api_key, "***") if self.api_key else text

    def _snippet(self, text: str, limit: int = 200) -> str:
        """The start of a server's reply for an error message, with the api key blanked
        (a server may echo the request back)."""
        text = " ".join(self._hide(text).split())
        return text[:limit] + ("…" if len(text) > limit else "") if text else "(empty body)"


def _shut(connection: HTTPConnection, sockets: list[socket.socket]) -> None:
    """The watchdog: at the deadline, shut every socket of the request under any read still
    waiting (the TLS handshake, status line and headers are read outside our loop)."""
    import socket

    for sock in [connection.sock, *sockets]:
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed
            pass
