"""Keep a secret out of what is printed, in whatever form a server echoes it back.

An error reply can repeat the request: a proxy's debug page, a server that quotes the bad
header. raglab prints the start of such a reply, so the api key must go first, and not only
as written: a JSON body escapes it (`\\u0073\\u006b...`), a URL encodes it (`%73%6B...`), a
header dump holds it in base64 (`Authorization: Basic ...`) or hex, an HTML page as
entities (`&#115;&#107;...`), a mail gateway as quoted-printable. Blanking a list of encodings would miss the next one, so the
rule has two parts:

1. the key as written (any letter case) becomes `***`;
2. the text is then decoded every way it could hide the key, a few rounds deep
   (`decoded_views`); if any view still holds the key, nothing of the text is shown.

>>> hide_secret('{"echo": "Bearer sk-abc123xyz"}', "sk-abc123xyz")
'{"echo": "Bearer ***"}'
>>> hide_secret('{"echo": "c2stYWJjMTIzeHl6"}', "sk-abc123xyz")
'(not shown: it holds the api key, encoded)'
"""

from __future__ import annotations

import base64
import binascii
import html
import quopri
import re
from collections.abc import Callable, Iterator
from urllib.parse import unquote_plus

__all__ = ["HIDDEN", "MIN_SECRET", "WITHHELD", "decoded_views", "hide_secret", "is_secret"]

HIDDEN = "***"
WITHHELD = "(not shown: it holds the api key, encoded)"

MIN_SECRET = 8
"""Characters a secret needs to be looked for in any case or encoding. A shorter api key is a
placeholder ("EMPTY", "ollama": what local servers accept), not a secret, and looked for
that widely it would be found in ordinary words; it is blanked only exactly as written."""

ROUNDS = 3
"""How deep encodings are undone (base64 of a URL-encoded key is two rounds)."""

_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\(.)", re.DOTALL)
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{8,}={0,2}")
_HEX_RUN = re.compile(r"(?:[0-9a-fA-F]{2}[\s:-]?){4,}")


def _json_unescaped(text: str) -> str:
    return _JSON_ESCAPE.sub(lambda m: chr(int(m[1], 16)) if m[1] else m[2], text)


def _base64_decoded(text: str) -> str:
    """Every run that could be base64 (either alphabet), decoded from each of its first four
    characters (a run may start inside a block of four), joined."""
    decoded = []
    for run in _BASE64_RUN.findall(text):
        for skip in range(4):
            body = run[skip:].rstrip("=")
            body = body[: len(body) - 1] if len(body) % 4 == 1 else body  # a lone sextet
            body += "=" * (-len(body) % 4)  # the padding a cut-out run lacks
            for alphabet in (b"+/", b"-_"):
                try:
                    raw = base64.b64decode(body, altchars=alphabet, validate=False)
                except (binascii.Error, ValueError):
                    continue
                decoded.append(raw.decode("latin-1"))
    return " ".join(decoded)


def _hex_decoded(text: str) -> str:
    decoded = []
    for run in _HEX_RUN.findall(text):
        digits = re.sub(r"[\s:-]", "", run)
        for skip in range(2):
            body = digits[skip:]
            decoded.append(bytes.fromhex(body[: len(body) - len(body) % 2]).decode("latin-1"))
    return " ".join(decoded)


def _quoted_printable_decoded(text: str) -> str:
    return quopri.decodestring(text.encode("utf-8", "replace")).decode("latin-1")


def _spaces_removed(text: str) -> str:
    return "".join(text.split())


DECODERS: tuple[Callable[[str], str], ...] = (
    _json_unescaped,
    unquote_plus,
    html.unescape,
    _base64_decoded,
    _hex_decoded,
    _quoted_printable_decoded,
    _spaces_removed,
)
"""Each undoes one way a text can carry a string it does not show as written."""


def decoded_views(text: str, rounds: int = ROUNDS) -> Iterator[str]:
    """`text`, and what each decoder makes of it, and of that, `rounds` deep.

    >>> "sk-1" in " ".join(decoded_views("%73%6B%2D%31"))
    True
    """
    seen = {text}
    layer = [text]
    yield text
    for _ in range(rounds):
        next_layer = []
        for view in layer:
            for decode in DECODERS:
                decoded = decode(view)
                if decoded and decoded not in seen:
                    seen.add(decoded)
                    next_layer.append(decoded)
                    yield decoded
        layer = next_layer


def hide_secret(text: str, secret: str | None) -> str:
    """`text` with `secret` blanked as `***`; or WITHHELD if it still holds it encoded."""
    if not secret:
        return text
    if len(secret) < MIN_SECRET:
        return text.replace(secret, HIDDEN)
    text = re.sub(re.escape(secret), HIDDEN, text, flags=re.IGNORECASE)
    wanted = secret.casefold()
    if any(wanted in view.casefold() for view in decoded_views(text)):
        return WITHHELD
    return text


def is_secret(key: str | None) -> bool:
    """True for a key long enough to be a secret (see MIN_SECRET)."""
    return key is not None and len(key) >= MIN_SECRET
