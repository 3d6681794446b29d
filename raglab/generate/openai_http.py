"""A real model over HTTP: any server that speaks OpenAI's `/chat/completions` protocol.

Ollama, llama.cpp's server, vLLM and OpenAI itself all do. The client is the standard
library's `http.client`, because a client that carries an api key must decide for itself
what to trust:

- **No redirects.** `http.client` never follows one, and neither does this client: a 3xx
  reply is an error. A redirect would send the key (and the prompt) to an address the
  user never chose, on any origin, so the user must set `base_url` to the final address.
- **The key is checked and never shown.** A key with whitespace or control characters
  could add a header line; it is refused, and no message, `repr` or error prints it, in
  any encoding a server may echo it back in (`raglab.generate.redaction`), in an error or in
  the answer itself. A key in the URL (`user:pass@host`, `?key=...`) is refused: it would be
  printed in every message (and so is a URL with a line break, which could forge one).
- **One deadline per request** (`timeout`, seconds, measured on a monotonic clock): it
  bounds connecting, the headers and the body together. The body is read in small reads,
  each allowed only the time left; a watchdog closes the socket at the deadline, so a
  server that drips one byte a second cannot hold a request past it.
- **A cap on the reply** (`max_bytes`): a server cannot fill the memory.
- **Every failure is a `GenerationError`** with one clear line (HTTP status, timeout,
  truncated body, not JSON, JSON nested too deep or with a number too long to read, no
  answer text, an empty answer), which the CLI prints as is.
- **The answer is text, not terminal commands**: control characters (an escape sequence
  could take over the asker's terminal) and bidi controls are taken out of it.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from raglab.generate.prompting import Prompt
from raglab.generate.redaction import WITHHELD, hide_secret, is_secret
from raglab.validation import check_int, check_number

if TYPE_CHECKING:  # for the annotations only: http.client is imported when a request is made
    import socket
    from http.client import HTTPConnection, HTTPResponse

__all__ = ["GenerationError", "OpenAIChatGenerator"]

READ_SIZE = 8192
"""Bytes asked for in one read of the body: small, so the deadline is checked often."""

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
"""4 MiB: a chat completion is a few kilobytes; anything near this is not one."""

MIN_TIMEOUT = 0.001
MAX_TIMEOUT = 3600
"""Seconds a request may take, at least and at most: a millisecond cannot even open a
connection, and a local model on a laptop CPU answers within minutes; beyond an hour the
socket and timer limits of the platform are near (1e12 s overflows them)."""

KEY_VARIABLE = "RAGLAB_API_KEY"
"""Where the `raglab` command reads the api key from (an error message names it)."""

# Characters taken out of an answer: C0 and C1 controls but tab and newline (an escape
# sequence can rewrite the asker's terminal, a carriage return overwrite a printed line),
# and the bidi embedding, override and isolate controls (they reorder what is shown).
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


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
        check_url(self.base_url)
        if not self.model:
            raise ValueError("model must not be empty (got model='')")
        check_number("timeout", self.timeout, minimum=MIN_TIMEOUT, maximum=MAX_TIMEOUT)
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
        except RecursionError:  # json.loads recurses once per level of nesting
            raise GenerationError(
                f"{self.url} answered HTTP {status} with JSON nested too deeply to read"
            ) from None
        except ValueError:  # an integer of thousands of digits, which int() refuses
            raise GenerationError(
                f"{self.url} answered HTTP {status} with a number too long to read"
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
        content = _UNPRINTABLE.sub("", content.replace("\r\n", "\n"))
        if not content.strip():  # an empty answer is a failure, never an answer
            raise GenerationError(f"{self.url} answered HTTP {status} with an empty answer")
        if is_secret(self.api_key):  # a server may put the key in the answer, too
            content = self._hide(content)
            if content == WITHHELD:
                raise GenerationError(
                    f"{self.url} answered HTTP {status} with the api key, encoded"
                )
        return content.strip()

    # --- error messages -------------------------------------------------------------------

    def _timed_out(self) -> str:
        return f"{self.url}: no answer within timeout={self.timeout} s (for the whole request)"

    def _too_large(self) -> str:
        return f"{self.url} sent a reply larger than max_bytes={self.max_bytes}"

    def _hide(self, text: str) -> str:
        return hide_secret(text, self.api_key)

    def _snippet(self, text: str, limit: int = 200) -> str:
        """The start of a server's reply for an error message, with the api key blanked in
        every form (a server may echo the request back, encoded).

        subtle: the key is blanked before the reply is cut, in a window long enough to hold
        any encoding of it that starts within the part shown, so a cut cannot leave half a key.
        """
        margin = 64 + 8 * len(self.api_key or "")
        whole = " ".join(text.split())
        shown = self._hide(whole[: limit + margin])
        more = len(shown) > limit or len(whole) > limit + margin
        return (shown[:limit] + ("…" if more else "")) if shown else "(empty body)"


def check_url(base_url: str) -> None:
    """Refuse a base url that is not http(s) or that holds a credential (shown without it).

    A user name and password (`user:pass@host`) or a query string (`?key=...`) would be
    printed in every error message, and raglab would drop the query anyway. The key goes
    in `api_key` (the `raglab` command reads it from RAGLAB_API_KEY), sent as a header.

    >>> check_url("http://user:hunter2@localhost:11434/v1")
    Traceback (most recent call last):
    ...
    ValueError: base_url must not hold a user name or password (user:password@host): give the api key as api_key instead (the raglab command reads it from RAGLAB_API_KEY) (got base_url='http://…@localhost:11434/v1')
    """
    if any(c.isspace() or not c.isprintable() for c in base_url):  # it is printed in messages
        raise ValueError(
            f"base_url must not hold whitespace or control characters (got base_url={base_url!r})"
        )
    parts = _url_parts(base_url)
    if "@" in parts["authority"]:
        raise ValueError(
            "base_url must not hold a user name or password (user:password@host): give the api "
            f"key as api_key instead (the raglab command reads it from {KEY_VARIABLE}) "
            f"(got base_url={_shown(base_url)!r})"
        )
    if parts["rest"]:
        raise ValueError(
            "base_url must not have a query string or fragment (such as ?key=...; raglab would "
            f"drop it): give the api key as api_key instead (the raglab command reads it from "
            f"{KEY_VARIABLE}) (got base_url={_shown(base_url)!r})"
        )
    if parts["scheme"].lower() not in ("http://", "https://"):
        raise ValueError(
            f"base_url must start with http:// or https:// (got base_url={base_url!r})"
        )


# A url's parts as written: scheme, authority (user:password@host:port), path, then "?..." / "#...".
_URL = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]*://|)(?P<authority>[^/?#]*)(?P<path>[^?#]*)(?P<rest>.*)",
    re.IGNORECASE | re.DOTALL,
)


def _url_parts(url: str) -> dict[str, str]:
    found = _URL.fullmatch(url)  # every text matches: each part may be empty
    return found.groupdict() if found else {"scheme": "", "authority": "", "path": url, "rest": ""}


def _shown(url: str) -> str:
    """`url` as it may be printed: a user name and password, a query, a fragment become "…".

    >>> _shown("https://me:secret@api.example/v1?key=sk-1#x")
    'https://…@api.example/v1?…'
    """
    parts = _url_parts(url)
    host = parts["authority"].rpartition("@")[2]
    return (
        parts["scheme"]
        + ("…@" if "@" in parts["authority"] else "")
        + host
        + parts["path"]
        + ("?…" if parts["rest"] else "")
    )


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
