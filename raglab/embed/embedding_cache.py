"""An embedding cache on disk: a text embedded once by a model is never embedded again.

`cached(embedder)` wraps an embedder in one that behaves exactly like it (same name, dim,
version and vectors) but first looks each text up in a SQLite file, one file per model,
so that a second process — the next notebook, the next `raglab ask --docs` — embeds only
the texts it has never seen. MiniLM takes ~20 s for the sample corpus; a warm cache, a
fraction of a second.

- The key is the text's blake2b digest; the file's name comes from the model's name,
  dim and version, so a vector made by another model or version can never come back.
- A fittable embedder (LSA) is not cached: its vectors depend on the corpus it was fit
  on, which the key does not capture. `cached` returns it unchanged.
- Two processes may write at once (SQLite locks; a busy timeout; INSERT OR IGNORE).
- A corrupt or unreadable cache file is a warning, never an error: the file is rebuilt,
  or, when that fails too, the texts are simply embedded. An entry that is not a vector
  of the model's width (another size, another type, a NaN or an infinity) is discarded:
  its text is embedded again and the entry replaced.
- The cache is private (folder 0700, files 0600): a vector is filed under its text's
  digest, so whoever can read the file can confirm a guessed text. A folder that exists
  with wider permissions is made private when it holds nothing but cache files; one that
  also holds other files (say RAGLAB_CACHE_DIR=$HOME) is left as it is and not used,
  with a warning: changing the permissions of a folder that is not the cache's own could
  lock others out of what else it holds.
- A cached vector is the one the text got the first time. For MiniLM, a text embedded in
  another batch can differ in the last float bits (padding); the cache keeps one of them.

>>> import tempfile
>>> from raglab.embed.embedders import embedder
>>> folder = tempfile.mkdtemp()
>>> hashing = cached(embedder("hashing", dim=64), folder)
>>> hashing.embed(["refund policy"]).shape, hashing.name
((1, 64), 'hashing')
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import stat
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from raglab.embed.embedders import Embedder, is_fittable
from raglab.text import content_hash
from raglab.validation import check_texts

CACHE_DIR_VARIABLE = "RAGLAB_CACHE_DIR"
"""Environment variable naming the cache folder; without it, ~/.cache/raglab."""

BUSY_TIMEOUT_S = 30.0
"""How long a process waits for another one's write to finish before giving up."""

LOOKUP_BATCH = 500
"""Keys per SELECT: under SQLite's limit on parameters in one statement (999 in old builds)."""

FOLDER_MODE = 0o700
FILE_MODE = 0o600
"""The cache's folder and files are its owner's alone (the module docstring says why)."""

CACHE_SUFFIXES = (".sqlite", ".sqlite-journal", ".sqlite-wal", ".sqlite-shm")
"""Names of the files the cache writes: a folder holding only these is the cache's own."""


def default_folder() -> Path:
    """`$RAGLAB_CACHE_DIR`, else ~/.cache/raglab."""
    return Path(os.environ.get(CACHE_DIR_VARIABLE) or Path.home() / ".cache" / "raglab")


def text_key(text: str) -> bytes:
    """The cache key of a text: its 32-byte blake2b digest (collisions: never, in practice)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=32).digest()


def cache_file(embedder: Embedder, folder: Path) -> Path:
    """The model's own file: readable name and dim, plus a digest of name, version and dim.

    >>> from raglab.embed.embedders import embedder
    >>> cache_file(embedder("hashing", dim=64), Path("c")).name
    'hashing-64-565d58eb9085d376.sqlite'
    """
    identity = content_hash(f"{embedder.name}\n{embedder.version}\n{embedder.dim}")
    readable = re.sub(r"[^A-Za-z0-9_.-]", "_", embedder.name)
    return folder / f"{readable}-{embedder.dim}-{identity}.sqlite"


def cached(embedder: Embedder, folder: str | Path | None = None) -> Embedder:
    """`embedder` with a cache on disk in `folder`; a fittable one is returned unchanged."""
    if is_fittable(embedder):
        return embedder
    return CachedEmbedder(embedder, Path(folder) if folder is not None else default_folder())


@dataclass(frozen=True, slots=True)
class CachedEmbedder:
    """An `Embedder` that embeds with `inner` only the texts its cache file lacks."""

    inner: Embedder
    folder: Path

    def __post_init__(self) -> None:
        if callable(getattr(self.inner, "fit", None)):
            raise ValueError(
                f"a fittable embedder ({self.inner.name!r}) cannot be cached: its vectors "
                "depend on the corpus it is fit on"
            )

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def version(self) -> str:
        return self.inner.version

    @property
    def path(self) -> Path:
        return cache_file(self.inner, self.folder)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts("texts", texts)
        keys = [text_key(t) for t in texts]
        found = self._read(keys)
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if missing:  # one batch, each distinct text once
            new = self.inner.embed(list(missing.values()))
            fresh = dict(zip(missing, np.asarray(new, dtype=np.float32), strict=True))
            self._write(fresh)
            found.update(fresh)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out

    def _read(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        """The cached vectors among `keys`; empty when the file cannot be read."""
        found: dict[bytes, np.ndarray] = {}
        width = self.dim * 4  # float32 bytes; a blob of another size is ignored
        with self._connection() as db:
            if db is None:
                return found
            distinct = list(dict.fromkeys(keys))
            for start in range(0, len(distinct), LOOKUP_BATCH):
                batch = distinct[start : start + LOOKUP_BATCH]
                marks = ",".join("?" * len(batch))
                rows = db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", batch)
                for key, blob in rows:
                    vector = _vector(blob, width)
                    if vector is not None:  # else embedded again, and the entry replaced
                        found[key] = vector
        return found

    def _write(self, vectors: dict[bytes, np.ndarray]) -> None:
        with self._connection() as db:
            if db is not None:
                rows = [(k, v.tobytes()) for k, v in vectors.items() if np.isfinite(v).all()]
                # REPLACE: a key is only ever written when its stored entry was missing or discarded.
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
                db.commit()

    def _connection(self) -> _Connection:
        return _Connection(self.path)


class _Connection:
    """`with _Connection(path) as db`: an open cache, or None (after a warning) if it cannot be.

    A corrupt file is deleted and made again once; any other SQLite failure inside the
    block is reported and swallowed, since a cache is never worth failing a run for.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection | None:
        for attempt in range(2):
            try:
                self.db = _open(self.path)
                return self.db
            except (sqlite3.Error, OSError) as error:
                self._close()
                if attempt == 0 and _is_corrupt(error):
                    _warn(self.path, error, "rebuilding it")
                    _delete(self.path)
                else:
                    _warn(self.path, error, "embedding without it")
        return None

    def __exit__(self, kind: type | None, error: BaseException | None, _tb: object) -> bool:
        self._close()
        if isinstance(error, sqlite3.Error):
            _warn(self.path, error, "deleting it" if _is_corrupt(error) else "embedding without it")
            if _is_corrupt(error):
                _delete(self.path)
            return True  # swallowed: the caller embeds what it could not read
        return False

    def _close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def _vector(blob: object, width: int) -> np.ndarray | None:
    """The stored vector, or None when the entry is not one: not bytes of `width`, or not finite."""
    if not isinstance(blob, bytes) or len(blob) != width:
        return None
    vector = np.frombuffer(blob, dtype=np.float32)
    return vector if np.isfinite(vector).all() else None


def _open(path: Path) -> sqlite3.Connection:
    _private_folder(path.parent)
    _private_file(path)
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
    try:  # a file that is not a database fails here
        db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB)")
    except sqlite3.Error:
        db.close()
        raise
    return db


def _private_folder(folder: Path) -> None:
    """Create `folder` private, or make it private; PermissionError when it is not the
    cache's own (it holds other files), so that its permissions are not ours to change."""
    folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    mode = stat.S_IMODE(folder.stat().st_mode)
    if mode & ~FOLDER_MODE == 0:
        return
    others = sorted(p.name for p in folder.iterdir() if not p.name.endswith(CACHE_SUFFIXES))
    if others:
        raise PermissionError(
            f"folder {str(folder)!r} can be read by other users (mode {mode:o}) and holds more than "
            f"the cache ({others[0]!r}...): make it private (chmod 700) or set "
            f"{CACHE_DIR_VARIABLE} to a folder of its own"
        )
    folder.chmod(FOLDER_MODE)


def _private_file(path: Path) -> None:
    """Create the cache file private (SQLite gives its journals the same mode), or make it so.

    A link in its place is refused (O_NOFOLLOW): it could point the cache's writes elsewhere.
    """
    os.close(os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE))
    if stat.S_IMODE(path.stat().st_mode) & ~FILE_MODE:
        path.chmod(FILE_MODE)


def _is_corrupt(error: Exception) -> bool:
    """Corruption ("file is not a database", "malformed"), not a lock or a permission.

    Subtle: OperationalError (locked, cannot open) is a subclass of DatabaseError, and
    such a file must not be deleted, so the test is on the exact class.
    """
    return type(error) is sqlite3.DatabaseError


def _delete(path: Path) -> None:
    """The cache file and any journal left beside it (a stale journal would be replayed)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(OSError):  # cannot delete: the next open fails and says so
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def _warn(path: Path, error: Exception, action: str) -> None:
    warnings.warn(f"embedding cache {str(path)!r} unusable ({error}): {action}", stacklevel=3)
