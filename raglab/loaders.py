"""Files -> Document: load a folder of `.md` / `.txt` files, validating each one.

A corpus is a folder; a document's id is its POSIX path relative to that folder
(`acme/policies/leave.md`). Every file is checked before it becomes a `Document`:

- it lies inside the approved folder once symbolic links are resolved (a link pointing
  out of the folder is refused: it could expose any file on the machine);
- it is a regular file of at most `max_bytes` bytes, not binary (no NUL byte) and valid
  UTF-8 (a leading byte-order mark is dropped: it marks the encoding, it is not content);
- its optional front matter is well formed (see `parse_front_matter`).

One bad file never loses the rest: `load_folder` collects a `DocumentError` for it and
loads the others. Line endings are normalised to "\\n", so a file checked out with
Windows line endings gives the same text, hash and chunk offsets on every machine.

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

`load_folder` applies three more rules, which need the whole corpus. `supersedes` must
name other documents of the same tenant, without a cycle (`raglab.versions`); naming no
file of the corpus is only a warning (`LoadResult.warnings`). The sample corpus
keeps each tenant's documents in a top-level folder named after it (`acme/...`), so a
top-level folder whose name is exactly a tenant some loaded document declares is that
tenant's folder, and every file in it must carry that tenant:

- a file whose front matter names another tenant is refused (fix the tenant or move
  the file): a document is never indexed under a tenant its folder contradicts;
- a file with no tenant (no front matter, or none of its own) is refused rather than
  silently made public in "default" or silently given the folder's tenant: its groups
  are unknown too, so only its author can say who may read it.

A refused file is reported in `LoadResult.errors` (the CLI prints "skipped <file>:
<reason>") and indexed nowhere.

Credentials: a file holding what looks like a key, password or token (`raglab.credentials`)
is refused, or with `secrets="redact"` loaded with each secret replaced by [REDACTED]
and reported in `LoadResult.warnings`. Messages name the line and the kind, never the
secret itself.
"""

from __future__ import annotations

import codecs
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from raglab.records import DEFAULT_TENANT, Document
from raglab.text import markdown_lines
from raglab.validation import check_int
from raglab.versions import supersedes_problems, unknown_targets

DEFAULT_MAX_BYTES = 1_000_000
"""Largest file loaded (1 MB, about 150 pages of text): anything bigger in a folder of
policies and notes is far more likely a mistake (a log, a dump) than a document."""

SUFFIXES = (".md", ".txt")
DEFAULT_MAX_FILES = 10_000
"""Most files a corpus folder may hold: more is far more likely a wrong folder (a home
directory, a checkout with its dependencies) than a knowledge base; raise it if not."""
SECRET_POLICIES = ("refuse", "redact")
"""What the loader does with a file holding a credential (`raglab.credentials`)."""
FRONT_MATTER_KEYS = ("groups", "supersedes", "tenant", "title", "version")
FENCE = "---"
ACCESS_KEYS = ("groups", "tenant")
"""The front-matter keys that decide who may read a document."""


class CorpusError(ValueError):
    """The corpus folder as a whole cannot be used (missing, not a folder, no documents)."""


class DocumentError(ValueError):
    """One file cannot be loaded. `str(error)` is "<document id>: <reason>"."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self):  # keep the two-argument constructor picklable
        return (type(self), (self.path, self.reason))


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What `load_folder` found: the documents that loaded and an error for each that did not."""

    documents: tuple[Document, ...]
    errors: tuple[DocumentError, ...]
    warnings: tuple[DocumentError, ...] = ()  # loaded, but changed or doubtful: what and why


# ---------------------------------------------------------------------------- folder


def load_folder(
    root: str | Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
    secrets: str = "refuse",
) -> LoadResult:
    """Load every `.md` and `.txt` file under `root` (recursively), sorted by document id.

    Hidden files and folders (a name starting with ".", such as .git) are skipped, and so
    are symbolic links to folders (following them could loop or leave the corpus).
    Raises `CorpusError` when `root` is missing, not a folder, holds no .md/.txt file, or
    more than `max_files` of them. `max_bytes` and `secrets` are `load_file`'s.
    """
    max_files = check_int("max_files", max_files, minimum=1)
    folder = Path(root)
    if not folder.exists():
        raise CorpusError(f"corpus folder {str(folder)!r} does not exist")
    if not folder.is_dir():
        raise CorpusError(f"corpus folder {str(folder)!r} is not a folder")
    paths = _candidate_files(folder, max_files)
    if len(paths) > max_files:
        raise CorpusError(
            f"corpus folder {str(folder)!r} holds more than max_files={max_files} .md/.txt "
            "files; point at the documents' own folder, or raise the limit (--max-files)"
        )
    if not paths:
        kinds = " or ".join(SUFFIXES)
        raise CorpusError(f"corpus folder {str(folder)!r} contains no {kinds} file")
    documents: list[Document] = []
    errors: list[DocumentError] = []
    redacted: list[DocumentError] = []
    for path in paths:
        try:
            document, notice = _load(path, folder, max_bytes, secrets)
        except DocumentError as error:
            errors.append(error)
            continue
        documents.append(document)
        if notice:
            redacted.append(DocumentError(document.id, notice))
    misplaced = _tenant_folder_errors(documents)
    documents = [doc for doc in documents if doc.id not in misplaced]
    versions = supersedes_problems(documents)
    misplaced.update({doc_id: DocumentError(doc_id, why) for doc_id, why in versions.items()})
    documents = [doc for doc in documents if doc.id not in misplaced]
    errors = sorted([*errors, *misplaced.values()], key=lambda error: error.path)
    known = {_document_id(path, folder) for path in paths}
    unknown = unknown_targets(documents, known)
    redacted += [DocumentError(doc_id, why) for doc_id, why in unknown.items()]
    kept = {doc.id for doc in documents}
    notices = sorted((n for n in redacted if n.path in kept), key=lambda notice: notice.path)
    return LoadResult(tuple(documents), tuple(errors), tuple(notices))


def _tenant_folder_errors(documents: list[Document]) -> dict[str, DocumentError]:
    """An error for each document whose tenant contradicts its tenant folder (module docstring).

    A top-level folder is a tenant's folder when its name is exactly a tenant that some
    loaded document declares; every document in it must carry that tenant.
    """
    known = {doc.tenant for doc in documents}
    errors: dict[str, DocumentError] = {}
    for doc in documents:
        folder, slash, _ = doc.id.partition("/")
        if not slash or folder not in known or doc.tenant == folder:
            continue
        if doc.tenant == DEFAULT_TENANT:
            reason = (
                f"refused: it names no tenant (it would be public in tenant {DEFAULT_TENANT!r}) "
                f"but lies in folder '{folder}/' of tenant {folder!r}; add 'tenant: {folder}' "
                "and its groups to its front matter"
            )
        else:
            reason = (
                f"refused: its front matter names tenant {doc.tenant!r} but it lies in "
                f"folder '{folder}/' of tenant {folder!r}; correct the tenant or move the file"
            )
        errors[doc.id] = DocumentError(doc.id, reason)
    return errors


def _candidate_files(folder: Path, max_files: int) -> list[Path]:
    """The .md/.txt files under `folder`, skipping hidden names, sorted by document id.

    The walk stops after `max_files + 1` files: a wrong folder (say /) is not walked whole.
    """
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(folder):  # followlinks=False: see load_folder
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.startswith(".") or not name.lower().endswith(SUFFIXES):
                continue
            path = Path(dirpath, name)
            found[path.relative_to(folder).as_posix()] = path
            if len(found) > max_files:
                return list(found.values())
    return [found[doc_id] for doc_id in sorted(found)]


# ---------------------------------------------------------------------------- one file


def load_file(
    path: str | Path,
    *,
    root: str | Path,
    max_bytes: int = DEFAULT_MAX_BYTES,
    secrets: str = "refuse",
) -> Document:
    """Load and validate one file of the corpus folder `root`; raise `DocumentError` if bad.

    A file holding a credential is refused, or with `secrets="redact"` loaded with each
    secret replaced by [REDACTED] (`raglab.credentials`).

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "leave.md").write_text("---\\ntenant: acme\\n---\\n# Leave\\nTen days.\\n")
    >>> doc = load_file(folder / "leave.md", root=folder)
    >>> doc.id, doc.title, doc.tenant, doc.text
    ('leave.md', 'Leave', 'acme', '# Leave\\nTen days.\\n')
    """
    return _load(Path(path), Path(root), max_bytes, secrets)[0]


def _load(path: Path, root: Path, max_bytes: int, secrets: str) -> tuple[Document, str]:
    """The document and, when secrets were cut out of it, a notice saying where."""
    max_bytes = check_int("max_bytes", max_bytes, minimum=1)
    if secrets not in SECRET_POLICIES:
        choices = ", ".join(SECRET_POLICIES)
        raise ValueError(f"unknown secrets policy {secrets!r}; choose from: {choices}")
    doc_id = _document_id(path, root)
    data = _read_inside_corpus(path, root, doc_id, max_bytes)
    text = _decode(data, doc_id)
    fields, body = parse_front_matter(text, doc_id)
    body, notice = _without_secrets(text, body, doc_id, secrets)
    title = fields.get("title") or _default_title(body, path)
    document = Document(
        id=doc_id,
        text=body,
        title=title,
        tenant=fields.get("tenant", DEFAULT_TENANT),
        groups=fields.get("groups", ()),
        version=fields.get("version", "1"),
        supersedes=fields.get("supersedes", ()),
    )
    return document, notice


def _without_secrets(text: str, body: str, doc_id: str, policy: str) -> tuple[str, str]:
    """The body with no secret in it and a notice of what was cut; or `DocumentError`.

    Refused when the policy is "refuse", and also when redacting cannot remove them all
    (a secret in the front matter, or one written with look-alike characters).
    """
    # Here, not at the top: `raglab ask --index` imports this module but loads no file, and
    # compiling the credential patterns is a noticeable share of its start-up.
    from raglab.credentials import REDACTED, find_secrets, redact

    found = find_secrets(text)
    if not found:
        return body, ""
    first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    where = f"line {first.line} holds what looks like a credential ({first.kind}){more}"
    if policy == "redact":
        clean = redact(body)
        if not find_secrets(text[: len(text) - len(body)] + clean):
            return clean, f"redacted: {where}; each replaced by {REDACTED}"
    raise DocumentError(
        doc_id,
        f"refused: {where}; credentials do not belong in a corpus (anyone who may read "
        "the document could retrieve them): remove them, or load with --secrets redact",
    )


def _document_id(path: Path, root: Path) -> str:
    """The POSIX path of `path` relative to `root`, before any link is followed."""
    relative = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root)))
    if relative.parts and relative.parts[0] == "..":
        raise DocumentError(path.as_posix(), f"is not inside the corpus folder {str(root)!r}")
    return relative.as_posix()


def _read_inside_corpus(path: Path, root: Path, doc_id: str, max_bytes: int) -> bytes:
    """The file's bytes, after the where / what / how-big checks."""
    # Subtle: resolve both sides, so a symbolic link is judged by where it really points.
    real = path.resolve()
    if not real.is_relative_to(root.resolve()):
        raise DocumentError(doc_id, "symbolic link points outside the corpus folder")
    if not real.exists():
        raise DocumentError(doc_id, "file does not exist")
    if not real.is_file():
        raise DocumentError(doc_id, "not a regular file")
    size = real.stat().st_size
    if size > max_bytes:
        raise DocumentError(doc_id, f"file too large ({size} bytes > max_bytes={max_bytes})")
    try:
        data = real.read_bytes()
    except OSError as error:
        raise DocumentError(doc_id, f"cannot be read ({error.strerror})") from None
    if len(data) > max_bytes:  # it grew between the size check and the read
        raise DocumentError(doc_id, f"file too large ({len(data)} bytes > max_bytes={max_bytes})")
    return data


def _decode(data: bytes, doc_id: str) -> str:
    """Strict UTF-8 text with "\\n" line endings; binary files and bad bytes are refused."""
    nul = data.find(b"\x00")
    if nul >= 0:
        raise DocumentError(doc_id, f"binary file (NUL byte at offset {nul})")
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = data[error.start]
        raise DocumentError(
            doc_id, f"not valid UTF-8 (byte 0x{bad:02x} at offset {error.start})"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _default_title(body: str, path: Path) -> str:
    """The first `# ` heading of a Markdown body (outside code fences), else the file stem."""
    if path.suffix.lower() == ".md":
        for line in markdown_lines(body):
            if line.kind == "heading" and line.level == 1 and line.title:
                return line.title
    return path.stem


# ---------------------------------------------------------------------------- front matter


def parse_front_matter(text: str, doc_id: str = "<text>") -> tuple[dict, str]:
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
    fields: dict = {}
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


def _parse_line(raw: str, number: int, fields: dict, doc_id: str) -> None:
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
