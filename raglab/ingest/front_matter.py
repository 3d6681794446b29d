"""Front matter: the block at the top of a document that says who may read it.

Front matter is the block between a first line `---` and the next `---` line:

    ---
    title: Leave policy
    tenant: acme            # default tenant if absent: "default"
    groups: [hr, managers]  # absent or [] = every user of the tenant
    version: 2
    supersedes: [acme/policies/leave-2024.md]   # optional: the older documents it replaces
    ---

It is a small subset of YAML, parsed by hand: `key: value`, inline lists `[a, b]`,
'single' or "double" quotes, `# comments`. Only the keys title, tenant, groups, version
and supersedes are accepted: an unknown key is an error, not silently ignored, because a typo
such as `grups:` would otherwise leave a restricted document readable by everyone.
`Document.text` is the body after the front matter; chunk offsets index into it.

Access rules for ambiguous files. Front matter decides who may read a document, so a
file that *looks* as if it carries front matter but cannot be read as such is refused
with a `DocumentError` (file, line, reason), never indexed as a public "default" document.
Lines are compared as a reader sees them: Unicode NFKC-folded (full-width letters
become ASCII), invisible format characters (zero-width space, soft hyphen, a second
byte-order mark, bidi marks) removed, surrounding spaces ignored, any letter case, so a
look-alike cannot slip past. Refused:

- displaced front matter: the first non-blank line is a `---` look-alike followed by
  `key:` lines, but it is not exactly `---` on line 1 (blank lines, a space or an
  invisible character come before it);
- TOML front matter (`+++` as the first non-blank line): not supported;
- unfenced front matter: the file opens with `key:` lines holding `tenant:` or `groups:`
  but no `---` line (add the fences; a text that really starts so needs front matter);
- misplaced front matter: anywhere later, a `---` look-alike that opens a block of
  `key:` lines holding `tenant:` or `groups:` (in any case). This also catches such a
  block inside a code example: reword the example (it cannot be told apart safely).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from raglab.text import shown

FRONT_MATTER_KEYS = ("groups", "supersedes", "tenant", "title", "version")
FENCE = "---"
ACCESS_KEYS = ("groups", "tenant")
"""The front-matter keys that decide who may read a document."""


# Defined here, the first module that raises it; `raglab.ingest.loaders` raises it for whole files.
class DocumentError(ValueError):
    """One file cannot be loaded. `str(error)` is "<document id>: <reason>", the id escaped
    to print on one line (`raglab.text.shown`); `path` is the id itself."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{shown(path)}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple[type[DocumentError], tuple[str, str]]:
        # keep the two-argument constructor picklable
        return (type(self), (self.path, self.reason))


# ---------------------------------------------------------------------------- front matter


def parse_front_matter(text: str, doc_id: str = "<text>") -> tuple[dict[str, Any], str]:
    """Split `text` into its front-matter fields and its body.

    Returns `(fields, body)`: fields holds only the keys present, already typed (groups
    a sorted tuple without duplicates, version a str). Text without front matter gives
    `({}, text)`. Malformed front matter raises `DocumentError` naming the line.

    >>> parse_front_matter("---\\ngroups: [hr, admin, hr]\\nversion: 2\\n---\\nBody")
    ({'groups': ('admin', 'hr'), 'version': '2'}, 'Body')
    >>> parse_front_matter("No front matter.")
    ({}, 'No front matter.')
    """
    lines = text.split("\n")
    if lines[0].rstrip() != FENCE:
        _refuse_hidden_front_matter(lines, 0, doc_id)
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].rstrip() == FENCE:
            break
    else:
        raise DocumentError(
            doc_id, "front matter opened on line 1 is never closed (no second '---' line)"
        )
    fields: dict[str, Any] = {}
    for number in range(2, end + 1):  # file line numbers start at 1; line 1 is the fence
        _parse_line(lines[number - 1], number, fields, doc_id)
    _refuse_hidden_front_matter(lines, end + 1, doc_id)
    return fields, "\n".join(lines[end + 1 :])


# ---------------------------------------------------------------------------- look-alikes

# A `key:` (or a quoted `"key":`) at the start of a line as `_visible` returns it.
_KEY = re.compile(r"[\"']?([a-z_][\w-]*)[\"']?\s*:")
_FENCE_LIKE = re.compile(r"-{3,}")


def _visible(line: str) -> str:
    """`line` as a reader sees it: NFKC-folded, lower-case, stripped, no invisible characters.

    Subtle: NFKC turns full-width look-alikes (`－－－`, `ｔｅｎａｎｔ：`) into ASCII, and
    dropping format characters (category Cf: zero-width space, soft hyphen, byte-order
    mark, bidi marks) removes what an editor does not show.

    >>> _visible("\\ufeff －－－ "), _visible("ten\\u200bant: acme")
    ('---', 'tenant: acme')
    """
    if line.isascii():  # NFKC leaves ASCII as it is, and no ASCII character is invisible
        return line.strip().lower()
    line = unicodedata.normalize("NFKC", line)
    return "".join(c for c in line if unicodedata.category(c) != "Cf").strip().lower()


def _is_fence_like(line: str) -> bool:
    """A line a reader would take for a `---` fence (three or more dashes, as `_visible`)."""
    if line.isascii() and "---" not in line:
        return False  # the common case, decided without folding
    return _FENCE_LIKE.fullmatch(_visible(line)) is not None


def _block_keys(lines: list[str], start: int) -> set[str]:
    """The keys of the run of `key: value` lines from `start` (blank and # lines allowed)."""
    keys: set[str] = set()
    for index in range(start, len(lines)):  # not lines[start:]: no copy per fence
        visible = _visible(lines[index])
        if not visible or visible.startswith("#"):
            continue
        match = _KEY.match(visible)
        if match is None:
            break
        keys.add(match.group(1))
    return keys


def _refuse_hidden_front_matter(lines: list[str], start: int, doc_id: str) -> None:
    """Refuse front matter that is present but would be ignored (rules in the module docstring).

    `start` is the index of the first body line; every line from there is checked.
    """
    at_top = start == 0  # no front matter was read: the file's top is checked too
    for index in range(start, len(lines)):
        line = lines[index]
        if at_top and not _visible(line):
            continue  # blank lines (or invisible ones) before the first content
        if at_top and _visible(line) == "+++":
            reason = "TOML front matter ('+++') is not supported; write '---' on line 1"
            raise DocumentError(doc_id, f"line {index + 1}: {reason}")
        if at_top and set(_block_keys(lines, index)) & set(ACCESS_KEYS):
            reason = (
                "the file opens with front-matter keys but no '---' line; enclose them in "
                "'---' lines, starting on line 1 (or, if this is text, put front matter first)"
            )
            raise DocumentError(doc_id, f"line {index + 1}: {reason}")
        if _is_fence_like(line):
            keys = _block_keys(lines, index + 1)
            if at_top and keys:
                reason = (
                    f"{line[:20]!r} looks like front matter, but front matter must start "
                    "with exactly '---' on line 1 (remove the blank lines, spaces or invisible "
                    "characters before it); refused rather than indexed as public"
                )
                raise DocumentError(doc_id, f"line {index + 1}: {reason}")
            misplaced = sorted(keys & set(ACCESS_KEYS))
            if misplaced:
                reason = (
                    f"a '---' line followed by {', '.join(key + ':' for key in misplaced)} "
                    "looks like front matter, but front matter is read only at the top of the "
                    "file; move it to line 1, or reword these lines"
                )
                raise DocumentError(doc_id, f"line {index + 1}: {reason}")
        at_top = False


def _parse_line(raw: str, number: int, fields: dict[str, Any], doc_id: str) -> None:
    """Parse one `key: value` line of front matter into `fields`."""

    def fail(reason: str) -> DocumentError:
        return DocumentError(doc_id, f"front matter line {number}: {reason}")

    line = _strip_comment(raw).strip()
    if not line:
        return
    if line.startswith("- "):
        raise fail(
            "block lists are not supported; write lists inline, like groups: [hr, managers] "
            f"(got {raw.strip()!r})"
        )
    key, colon, value = line.partition(":")
    key = key.strip()
    if not colon or not key:
        raise fail(f"expected 'key: value' (got {raw.strip()!r})")
    if key not in FRONT_MATTER_KEYS:
        raise fail(f"unknown key {key!r} (expected one of: {', '.join(FRONT_MATTER_KEYS)})")
    if key in fields:
        raise fail(f"key {key!r} is given twice")
    try:
        fields[key] = _typed_value(key, value.strip())
    except ValueError as error:
        raise fail(str(error)) from None


def _typed_value(key: str, value: str) -> str | tuple[str, ...]:
    """The value of `key`, checked: groups is a list, supersedes one id or a list of ids,
    the others are single non-list values."""
    if key == "supersedes":
        return _document_ids(value)
    if key == "groups":
        if not (value.startswith("[") and value.endswith("]")):
            raise ValueError(f"groups must be a list like [hr, managers] (got {value!r})")
        items = [_scalar(item) for item in _split_list(value[1:-1])]
        if any(not item for item in items):
            raise ValueError(f"groups must not contain an empty name (got {value!r})")
        return tuple(sorted(set(items)))
    if value.startswith("["):
        raise ValueError(f"{key} must be a single value, not a list (got {value!r})")
    scalar = _scalar(value)
    if not scalar and key in ("tenant", "version"):
        raise ValueError(f"{key} must not be empty")
    return scalar


def _document_ids(value: str) -> tuple[str, ...]:
    """The ids of `supersedes: a.md` or `supersedes: [a.md, b.md]`: relative POSIX paths."""
    listed = value.startswith("[") and value.endswith("]")
    ids = [_scalar(item) for item in _split_list(value[1:-1])] if listed else [_scalar(value)]
    for doc_id in ids:
        parts = doc_id.split("/")
        if not doc_id or doc_id.startswith("/") or "\\" in doc_id or ".." in parts:
            raise ValueError(
                "supersedes must name document ids, paths relative to the corpus folder "
                f"like acme/policies/leave.md (got {value!r})"
            )
    return tuple(sorted(set(ids)))


def _scalar(value: str) -> str:
    """A bare or quoted value without its quotes."""
    value = value.strip()
    if value[:1] in ("'", '"'):
        if len(value) < 2 or value[-1] != value[0]:
            raise ValueError(f"unclosed quote in {value!r}")
        return value[1:-1]
    return value


def _split_list(inner: str) -> list[str]:
    """Split the inside of `[a, "b, c"]` on commas that are not inside quotes."""
    if not inner.strip():
        return []
    items, current, quote = [], "", ""
    for char in inner:
        if quote:
            quote = "" if char == quote else quote
        elif char in ("'", '"') and not current.strip():  # a quote only opens an item
            quote = char
        elif char == ",":
            items.append(current)
            current = ""
            continue
        current += char
    return items + [current]


def _strip_comment(line: str) -> str:
    """Drop a `# comment`: a '#' at the start or after a space, and not inside quotes.

    As in YAML, a quote opens a quoted value only at the start of a value or list item,
    so the apostrophe in `title: Don't panic  # note` is just a letter.
    """
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in ("'", '"') and line[:i].rstrip()[-1:] in (":", "[", ","):
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line
