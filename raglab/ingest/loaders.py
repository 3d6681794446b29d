"""Files -> Document: load a folder of `.md` / `.txt` files, validating each one.

A corpus is a folder; a document's id is its POSIX path relative to that folder
(`acme/policies/leave.md`). Every file is checked before it becomes a `Document`:

- it lies inside the approved folder once symbolic links are resolved (a link pointing
  out of the folder is refused: it could expose any file on the machine);
- it is a regular file of at most `max_bytes` bytes, not binary (no NUL byte) and valid
  UTF-8 (a leading byte-order mark is dropped: it marks the encoding, it is not content);
- its optional front matter is well formed (see `parse_front_matter`).

One bad file never loses the rest: `load_folder` collects a `DocumentError` for it and
loads the others. So does a folder it cannot walk: one nested more than `MAX_DEPTH`
levels deep, or one it cannot open, is skipped with an error naming it (a link to a
folder is never followed, so links cannot loop; a file link that loops is refused).
Messages print names through `raglab.text.shown`: a file name holding a newline or a
terminal escape sequence cannot forge a line of output or take over the terminal.
Line endings are normalised to "\\n", so a file checked out with Windows line endings
gives the same text, hash and chunk offsets on every machine.

Front matter (title, tenant, groups, version, supersedes) is parsed, and refused when it
is ambiguous, by `raglab.ingest.front_matter`.

`load_folder` applies three more rules, which need the whole corpus. `supersedes` must
name other documents of the same tenant, without a cycle (`raglab.store.versions`); naming no
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

Credentials: a file holding what looks like a key, password or token (`raglab.ingest.credentials`)
is refused, or with `secrets="redact"` loaded with each secret replaced by [REDACTED]
and reported in `LoadResult.warnings`. Messages name the line and the kind, never the
secret itself.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

# DocumentError is raised here and re-exported: callers of the loader catch it from here
from raglab.ingest.front_matter import DocumentError as DocumentError
from raglab.ingest.front_matter import parse_front_matter
from raglab.ingest.supersedes import supersedes_problems, unknown_targets
from raglab.records import DEFAULT_TENANT, Document
from raglab.text import markdown_lines, shown
from raglab.validation import check_int

DEFAULT_MAX_BYTES = 1_000_000
"""Largest file loaded (1 MB, about 150 pages of text): anything bigger in a folder of
policies and notes is far more likely a mistake (a log, a dump) than a document."""

SUFFIXES = (".md", ".txt")
DEFAULT_MAX_FILES = 10_000
"""Most files a corpus folder may hold: more is far more likely a wrong folder (a home
directory, a checkout with its dependencies) than a knowledge base; raise it if not."""
MAX_DEPTH = 32
"""Deepest folder read below the corpus folder. Real document trees are a few levels deep;
a deeper one is far more likely generated (an archive unpacked into itself, a script gone
wrong), and at a few hundred levels its paths outgrow what the system can open."""
SYMLINK_LOOP = "symbolic link loop: it never reaches a file"
SECRET_POLICIES = ("refuse", "redact")
"""What the loader does with a file holding a credential (`raglab.ingest.credentials`)."""


class CorpusError(ValueError):
    """The corpus folder as a whole cannot be used (missing, not a folder, no documents)."""


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
    are symbolic links to folders (following them could loop or leave the corpus). A folder
    deeper than `MAX_DEPTH` or unreadable is skipped with an error naming it.
    Raises `CorpusError` when `root` is missing, not a folder, holds no .md/.txt file, or
    more than `max_files` of them. `max_bytes` and `secrets` are `load_file`'s.
    """
    max_files = check_int("max_files", max_files, minimum=1)
    folder = Path(root)
    if not folder.exists():
        raise CorpusError(f"corpus folder '{shown(str(folder))}' does not exist")
    if not folder.is_dir():
        raise CorpusError(f"corpus folder '{shown(str(folder))}' is not a folder")
    paths, skipped = _candidate_files(folder, max_files)
    if len(paths) > max_files:
        raise CorpusError(
            f"corpus folder '{shown(str(folder))}' holds more than max_files={max_files} .md/.txt "
            "files; point at the documents' own folder, or raise the limit (--max-files)"
        )
    if not paths:
        kinds = " or ".join(SUFFIXES)
        raise CorpusError(f"corpus folder '{shown(str(folder))}' contains no {kinds} file")
    documents: list[Document] = []
    errors: list[DocumentError] = list(skipped)
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
        name = shown(folder)
        if doc.tenant == DEFAULT_TENANT:
            reason = (
                f"refused: it names no tenant (it would be public in tenant {DEFAULT_TENANT!r}) "
                f"but lies in folder '{name}/' of tenant {folder!r}; add 'tenant: {name}' "
                "and its groups to its front matter"
            )
        else:
            reason = (
                f"refused: its front matter names tenant {doc.tenant!r} but it lies in "
                f"folder '{name}/' of tenant {folder!r}; correct the tenant or move the file"
            )
        errors[doc.id] = DocumentError(doc.id, reason)
    return errors


def _candidate_files(folder: Path, max_files: int) -> tuple[list[Path], list[DocumentError]]:
    """The .md/.txt files under `folder`, skipping hidden names, sorted by document id, and
    an error for each folder skipped (deeper than `MAX_DEPTH`, or unreadable).

    The walk stops after `max_files + 1` files: a wrong folder (say /) is not walked whole.
    """
    found: dict[str, Path] = {}
    skipped: list[DocumentError] = []

    def unreadable(error: OSError) -> None:
        why = f"not read: the folder cannot be opened ({error.strerror})"
        skipped.append(DocumentError(_folder_id(error.filename, folder), why))

    for dirpath, dirnames, filenames in os.walk(folder, onerror=unreadable):  # no links followed
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        if dirnames and len(Path(dirpath).relative_to(folder).parts) >= MAX_DEPTH:
            why = f"not read: a folder more than {MAX_DEPTH} levels deep (move its files up)"
            skipped += [DocumentError(_folder_id(Path(dirpath, d), folder), why) for d in dirnames]
            dirnames.clear()
        for name in filenames:
            if name.startswith(".") or not name.lower().endswith(SUFFIXES):
                continue
            path = Path(dirpath, name)
            found[path.relative_to(folder).as_posix()] = path
            if len(found) > max_files:
                return list(found.values()), skipped
    return [found[doc_id] for doc_id in sorted(found)], skipped


def candidate_ids(root: str | Path, *, max_files: int = DEFAULT_MAX_FILES) -> frozenset[str]:
    """The document ids `load_folder(root)` would try, without reading a file: what a question
    set may name, known before any work (a typo in one is refused in a moment, not after
    indexing). Empty when `root` is not a folder (`load_folder` says why)."""
    folder = Path(root)
    if not folder.is_dir():
        return frozenset()
    paths, _ = _candidate_files(folder, max_files)
    return frozenset(path.relative_to(folder).as_posix() for path in paths)


def _folder_id(path: str | Path, root: Path) -> str:
    """A folder's POSIX path relative to the corpus folder, with a closing "/"."""
    return Path(os.path.relpath(path, root)).as_posix() + "/"


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
    secret replaced by [REDACTED] (`raglab.ingest.credentials`).

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
    (a secret in the front matter, which redaction leaves as written).
    """
    # Here, not at the top: `raglab ask --index` imports this module but loads no file, and
    # compiling the credential patterns is a noticeable share of its start-up.
    from raglab.ingest.credentials import REDACTED, find_secrets, redact

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
            f"refused: {where}, which redacting cannot cut out (in the front matter, or "
            "written with characters that fold into it): remove it from the file",
        )
    raise DocumentError(
        doc_id,
        f"refused: {where}; credentials do not belong in a corpus (anyone who may read "
        "the document could retrieve them): remove them, or load with --secrets redact",
    )


def _document_id(path: Path, root: Path) -> str:
    """The POSIX path of `path` relative to `root`, before any link is followed."""
    relative = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root)))
    if relative.parts and relative.parts[0] == "..":
        raise DocumentError(
            path.as_posix(), f"is not inside the corpus folder '{shown(str(root))}'"
        )
    return relative.as_posix()


def _read_inside_corpus(path: Path, root: Path, doc_id: str, max_bytes: int) -> bytes:
    """The file's bytes, after the where / what / how-big checks."""
    # Subtle: resolve both sides, so a symbolic link is judged by where it really points.
    try:
        real = path.resolve()
    except RuntimeError:  # a symbolic link loop, as Python before 3.13 reports it
        raise DocumentError(doc_id, SYMLINK_LOOP) from None
    if not real.is_relative_to(root.resolve()):
        raise DocumentError(doc_id, "symbolic link points outside the corpus folder")
    try:
        return _regular_file_bytes(real, doc_id, max_bytes)
    except OSError as error:
        raise DocumentError(doc_id, _unreadable(error)) from None


def _regular_file_bytes(real: Path, doc_id: str, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most `max_bytes` (OSError when it cannot be read)."""
    info = real.stat()
    if not stat.S_ISREG(info.st_mode):
        raise DocumentError(doc_id, "not a regular file")
    if info.st_size > max_bytes:
        raise DocumentError(
            doc_id, f"file too large ({info.st_size} bytes > max_bytes={max_bytes})"
        )
    data = real.read_bytes()
    if len(data) > max_bytes:  # it grew between the size check and the read
        raise DocumentError(doc_id, f"file too large ({len(data)} bytes > max_bytes={max_bytes})")
    return data


def _unreadable(error: OSError) -> str:
    """Why a file could not be read, without its path (the message names it once)."""
    if error.errno == errno.ENOENT:
        return "file does not exist"
    if error.errno == errno.ELOOP:
        return SYMLINK_LOOP
    return f"cannot be read ({error.strerror or type(error).__name__})"


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
