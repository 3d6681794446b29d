"""Credentials kept out of the corpus: find what looks like a key, password or token.

Whatever is indexed can be retrieved, quoted and sent to a model, so a document holding
a credential would hand it to anyone who may read the document, and to the model's
provider. The loader runs `find_secrets` on every file and refuses the file (or, if
asked, blanks each secret out with `redact`), naming the file, the line and the kind.

What is looked for (`PATTERNS`, then `high_entropy`):

- provider keys with a fixed shape: AWS access key ids, GitHub, Slack and Google API
  tokens, JSON web tokens, private key blocks (`-----BEGIN ... PRIVATE KEY-----`);
- `Authorization: Bearer <token>`;
- assignments such as `password = s3cr3t-Value` or `api_key: "..."` whose value looks
  like a secret (8+ characters with a digit or a symbol, not a placeholder like `<...>`);
- high-entropy strings: 24+ characters of a base64-like alphabet, letters and digits
  mixed, at least `MIN_ENTROPY` bits per character (a random key), which hex digests and
  UUIDs (at most 4 bits per character) stay below.

Text is scanned as a reader sees it: Unicode NFKC-folded, invisible format characters
removed, so a key typed in full-width letters or with a zero-width space is still found.
Known limits: a password stated in prose ("the password is Winter2025!") is not an
assignment and is not found; a secret split over lines, or encoded (hex, rot13), is not.

>>> [(f.kind, f.line) for f in find_secrets("id: 1\\naws = AKIAIOSFODNN7EXAMPLE\\n")]
[('AWS access key id', 2)]
>>> redact("token: ghp_abcdefghijklmnopqrstuvwxyz0123456789")
'token: [REDACTED]'
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

REDACTED = "[REDACTED]"

MIN_ENTROPY = 4.2
"""Bits per character from which a long token counts as random: a random base64 string
of 24+ characters scores about 4.5, English words and identifiers below 4, and a hex
digest or UUID at most 4 (16 symbols)."""

MIN_RANDOM_LENGTH = 24
"""Shortest token judged by entropy: shorter ones are too short to tell apart from words."""

_ASSIGNED = (
    r"(?i)(?:\b|(?<=_))(?:password|passwd|passphrase|pwd|secret|client_secret|api[_-]?key|apikey"
    r"|access[_-]?token|auth[_-]?token|secret[_-]?key|access[_-]?key|private[_-]?key)"
    r"\b[\"']?\s*[:=]\s*(?P<secret>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'`,;]+)"
)

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private key block", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{40,})")),
    ("Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+")),
    ("bearer token", re.compile(r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)")),
    ("password or key assignment", re.compile(_ASSIGNED)),
)
"""(kind, pattern): a match is a secret; a `secret` group, when present, is the part redacted."""

_TOKEN = re.compile(rf"[A-Za-z0-9+/_=-]{{{MIN_RANDOM_LENGTH},}}")
_PLACEHOLDER = re.compile(
    r"^[<{$\[(%*•]|^[x*.•-]+$|^(?:changeme|password|secret|example|none|null)$", re.IGNORECASE
)
"""Values that stand for a secret without being one: <your-key>, ${API_KEY}, ********."""


@dataclass(frozen=True, slots=True)
class Secret:
    """A credential-like span of a text: what it looks like, its line, and where it is."""

    kind: str
    line: int
    start: int
    end: int


def visible(text: str) -> str:
    """`text` NFKC-folded without invisible format characters (zero-width space, soft hyphen).

    >>> visible("AKIA\\u200bIOSF"), visible("ＡＫＩＡ")
    ('AKIAIOSF', 'AKIA')
    """
    if text.isascii():
        return text
    folded = unicodedata.normalize("NFKC", text)
    return "".join(c for c in folded if unicodedata.category(c) != "Cf")


def entropy(token: str) -> float:
    """Shannon entropy in bits per character of `token`'s characters.

    >>> entropy("aaaa"), entropy("abcd")
    (0.0, 2.0)
    """
    counts = Counter(token)
    return sum(n / len(token) * math.log2(len(token) / n) for n in counts.values())


def _looks_secret(value: str) -> bool:
    """An assigned value that is a credential, not prose or a placeholder."""
    value = value.strip("\"'")
    if len(value) < 8 or _PLACEHOLDER.search(value):
        return False
    return any(c.isdigit() for c in value) or any(not c.isalnum() for c in value)


def _is_random(token: str) -> bool:
    has_letters = any(c.isalpha() for c in token)
    has_digits = any(c.isdigit() for c in token)
    return has_letters and has_digits and entropy(token) >= MIN_ENTROPY


def _spans(text: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of every secret found in `text` itself (no folding)."""
    found = []
    for kind, pattern in PATTERNS:
        for match in pattern.finditer(text):
            if "secret" in pattern.groupindex:
                if kind == "password or key assignment" and not _looks_secret(match["secret"]):
                    continue
                found.append((kind, match.start("secret"), match.end("secret")))
            else:
                found.append((kind, match.start(), match.end()))
    covered = [(start, end) for _, start, end in found]
    for match in _TOKEN.finditer(text):
        inside = any(s <= match.start() < e for s, e in covered)
        if not inside and _is_random(match.group()):
            found.append(("high-entropy string", match.start(), match.end()))
    return sorted(found, key=lambda span: (span[1], span[0]))


def find_secrets(text: str) -> list[Secret]:
    """Every credential-like span of `text`, in order (offsets into `visible(text)`)."""
    text = visible(text)
    return [
        Secret(kind, text.count("\n", 0, start) + 1, start, end)
        for kind, start, end in _spans(text)
    ]


def redact(text: str) -> str:
    """`text` with each secret found in it replaced by `REDACTED`.

    Only what is found in the text as written can be cut out; `find_secrets` on the
    result says whether anything is left (a key hidden by look-alike characters).
    """
    for _, start, end in reversed(_spans(text)):
        text = text[:start] + REDACTED + text[end:]
    return text
