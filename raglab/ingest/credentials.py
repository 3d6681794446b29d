"""Credentials kept out of the corpus: find what looks like a key, password or token.

Whatever is indexed can be retrieved, quoted and sent to a model, so a document holding
a credential would hand it to anyone who may read the document, and to the model's
provider. The loader runs `find_secrets` on every file and refuses the file (or, if
asked, blanks each secret out with `redact`), naming the file, the line and the kind.

What is looked for (`PATTERNS`, then `high_entropy`):

- provider keys with a fixed shape: AWS access key ids, GitHub, Slack and Google API
  tokens, JSON web tokens, private key blocks (`-----BEGIN ... PRIVATE KEY-----`);
- `Authorization: Bearer <token>`;
- a password inside a URL (`postgres://app:s3cr3t@db.internal/prod`);
- assignments such as `password = s3cr3t-Value`, `db_pass: ...` or `api_key: "..."`, with
  the label in English or in another language (`Passwort:`, `mot de passe :`,
  `contraseña =`, `密码：`, `LABELS`), whose value looks like a secret (6+ characters with
  a digit or a symbol, not a placeholder like `<...>` or `${...}`);
- high-entropy strings: 24+ characters of a base64-like alphabet, letters and digits
  mixed, at least `MIN_ENTROPY` bits per character (a random key), which hex digests and
  UUIDs (at most 4 bits per character) stay below, and not made of words: a compound
  term or a link (`CD4+CD25+Foxp3+`, `briefing-papers/SN03760`) is words, acronyms and
  numbers joined by `+ / = _ -`, where a key is random all along (`key_material`).

Text is scanned as a reader sees it: Unicode NFKC-folded, invisible format characters
removed, so a key typed in full-width letters or with a zero-width space or soft hyphen
is still found, and `redact` cuts it out all the same.
Known limits: a password stated in prose ("the password is Winter2025!") or in a table
row is not an assignment and is not found; a secret split over lines, or encoded (hex,
rot13), is not; a random key of 24 characters is too short to be sure of (5 in 6 are
found; of 32 characters, 199 in 200). benchmarks/bench_secrets.py measures the other
side: ordinary documents of public corpora flagged.

>>> [(f.kind, f.line) for f in find_secrets("id: 1\\naws = AKIAIOSFODNN7EXAMPLE\\n")]
[('AWS access key id', 2)]
>>> redact("token: ghp_abcdefghijklmnopqrstuvwxyz0123456789")
'token: [REDACTED]'
>>> redact("DATABASE_URL=postgres://app:s3cr3t-42@db/prod")
'DATABASE_URL=postgres://app:[REDACTED]@db/prod'
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

REDACTED = "[REDACTED]"

MIN_ENTROPY = 4.1
"""Bits per character from which a long token counts as random. A random key of 24
base64 characters scores 4.3 on average (4.1 or more 5 times in 6), of 32 characters 4.6;
a hex digest or UUID scores at most 4 (16 symbols). Compound terms and links can score
as high as a key: `key_material` tells them apart."""

MIN_RANDOM_LENGTH = 24
"""Shortest token judged by entropy: shorter ones are too short to tell apart from words."""

MIN_UNEXPLAINED = 16
"""Characters of key material (`key_material`) a token needs to count as random: two thirds
of the shortest token judged: above what ordinary text reaches, below what almost every
random key has (`benchmarks/bench_secrets.py`; the README's Benchmarks section)."""

LABELS = (
    # English, as in configuration files and environment variables (DB_PASSWORD=, PGPASSWORD=)
    "password", "passwd", "passphrase", "pwd", "secret", r"api[\s_-]?key", r"access[\s_-]?token",
    r"auth[\s_-]?token", r"secret[\s_-]?key", r"access[\s_-]?key", r"private[\s_-]?key",
    r"(?<=_)pass", r"(?<=_)pw",  # db_pass, smtp_pw
    # "password" in other languages (with and without their accents)
    "passwort", "kennwort", r"mot\s+de\s+passe", "contraseña", "contrasena", "senha",
    "palavra-passe", "wachtwoord", "lösenord", "losenord", "passord", "adgangskode",
    "salasana", "hasło", "haslo", "heslo", "geslo", "lozinka", "jelszó", "jelszo",
    "parolă", "parola", "şifre", "sifre", "parool", "slaptažodis", "пароль", "парола",
    "лозинка", r"κωδικός\s+πρόσβασης", r"mật\s+khẩu", r"kata\s+sandi", r"kata\s+laluan",
    r"كلمة\s+المرور", r"كلمة\s+السر", "סיסמה", "סיסמא", "पासवर्ड",
)  # fmt: skip
"""Labels whose value is a password or key: regular expressions, matched in any case, also
at the end of a longer name (MYSQL_ROOT_PASSWORD, PGPASSWORD, Datenbankpasswort)."""

UNSPACED_LABELS = ("密码", "密碼", "口令", "パスワード", "暗証番号", "비밀번호", "암호", "패스워드", "รหัสผ่าน")  # fmt: skip
"""The same in scripts written without spaces: no word boundary comes before them."""

_LABEL = rf"(?:\b\w*(?:{'|'.join(LABELS)})|{'|'.join(UNSPACED_LABELS)})"
_VALUE = r"(?P<secret>\"[^\"\n]+\"|'[^'\n]+'|`[^`\n]+`|[^\s\"'`,;]+)"
_ASSIGNED = (  # markup may surround the label or the value: **Password:** `s3cr3t`
    rf"(?i){_LABEL}\b[*_`\"']{{0,2}}\s*(?::=|=>|[:=])\s*[*_`]{{0,2}}\s*{_VALUE}"
)
_OTHER_ASSIGNMENTS = (
    rf"(?i)<{_LABEL}>\s*(?P<secret>[^<\n]+?)\s*</",  # <password>s3cr3t</password>
    rf"(?i)(?<![\w-])--{_LABEL}[ \t]+(?!-){_VALUE}",  # mysql --password s3cr3t
)

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private key block", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{40,})")),
    ("Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+")),
    ("bearer token", re.compile(r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)")),
    # scheme://user:password@host (the user may be empty: redis://:password@host)
    (
        "password in a URL",
        re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s/?#@:]*:(?P<secret>[^\s/?#@]+)@"),
    ),
    *(("password or key assignment", re.compile(p)) for p in (_ASSIGNED, *_OTHER_ASSIGNMENTS)),
)
"""(kind, pattern): a match is a secret; a `secret` group, when present, is the part redacted
(when its value passes `_VALUE_CHECKS`)."""

_TOKEN = re.compile(rf"[A-Za-z0-9+/_=-]{{{MIN_RANDOM_LENGTH},}}")
_SEPARATOR = re.compile(r"[+/=_-]")
_WORD = re.compile(r"(?:[A-Z]+|[A-Z]?[a-z]+)?[0-9]*")
"""A piece of a token that explains itself: a word or an acronym, perhaps numbered, or a
number (Regulatory, MAGE, CD25, Foxp3, 2003)."""
_HEX = re.compile(r"[0-9a-fA-F]+")

_PLACEHOLDER = re.compile(
    r"^[<{$\[(%*•]|^[x*.•-]+$|^(?:changeme|change-me|changeit|password|passwort|pass|secret"
    r"|example|none|null|your_?password|my_?password)$",
    re.IGNORECASE,
)
"""Values that stand for a secret without being one: <your-key>, ${API_KEY}, ********,
and [REDACTED] itself."""


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
    value = value.strip("\"'`")
    if len(value) < 6 or _PLACEHOLDER.search(value):
        return False
    return any(c.isdigit() for c in value) or any(not c.isalnum() for c in value)


def _not_placeholder(value: str) -> bool:
    """A password in a URL is one unless it is a placeholder (user:<password>@, user:pass@)."""
    return not _PLACEHOLDER.search(value)


_VALUE_CHECKS = {"password or key assignment": _looks_secret, "password in a URL": _not_placeholder}
"""Patterns whose `secret` group counts only when its value passes a check."""


def key_material(token: str) -> str:
    """The part of `token` that could be a key: its pieces (between `+ / = _ -`) that are
    not a word or an acronym, perhaps numbered, or a number.

    A compound term or a link is made of such pieces (`CD4+CD25+Foxp3+Regulatory`,
    `uk/briefing-papers/SN03760`) and leaves little; a random key leaves itself.

    >>> key_material("CD4+CD25+Foxp3+Regulatory"), key_material("key-q8Zr2Lk9Vx4Tn7Wp1Ys6")
    ('', 'q8Zr2Lk9Vx4Tn7Wp1Ys6')
    """
    return "".join(p for p in _SEPARATOR.split(token) if not _WORD.fullmatch(p))


def _is_random(token: str) -> bool:
    """A long token of random characters: letters and digits, high entropy, and at least
    `MIN_UNEXPLAINED` characters of key material that is not a hex digest (`source-412f...`)."""
    material = key_material(token)
    has_letters = any(c.isalpha() for c in token)
    has_digits = any(c.isdigit() for c in token)
    return (
        len(material) >= MIN_UNEXPLAINED
        and not _HEX.fullmatch(material)
        and has_letters
        and has_digits
        and entropy(token) >= MIN_ENTROPY
    )


def _spans(text: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of every secret found in `text` itself (no folding)."""
    found = []
    for kind, pattern in PATTERNS:
        check = _VALUE_CHECKS.get(kind)
        for match in pattern.finditer(text):
            if "secret" in pattern.groupindex:
                if check is not None and not check(match["secret"]):
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

    Secrets are looked for as a reader sees the text, folded one character at a time, so
    each one maps back to the characters written: a key split by a soft hyphen or typed in
    full-width letters is cut out whole. `find_secrets` on the result says whether anything
    is left (folding that joins characters, such as a combining accent, can hide one).

    >>> redact("key AKIA\\u00adIOSFODNN7EXAMPLE here")
    'key [REDACTED] here'
    """
    seen, origin = _folded(text)
    for start, end in reversed(_merged(_spans(seen))):
        text = text[: origin[start]] + REDACTED + text[origin[end - 1] + 1 :]
    return text


def _folded(text: str) -> tuple[str, list[int]]:
    """`text` folded as `visible` folds it, one character at a time, and for each folded
    character the index of the character of `text` it comes from."""
    if text.isascii():
        return text, list(range(len(text)))
    seen: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        folded = char if char.isascii() else visible(char)
        seen.append(folded)
        origin += [index] * len(folded)
    return "".join(seen), origin


def _merged(spans: list[tuple[str, int, int]]) -> list[tuple[int, int]]:
    """The (start, end) ranges the spans cover, overlapping ones merged, in order.

    Subtle: two rules can flag the same characters (an AWS key in a `key = ...` line);
    cutting the same range out twice would cut into the text after it.
    """
    merged: list[tuple[int, int]] = []
    for _, start, end in sorted(spans, key=lambda span: (span[1], span[2])):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
