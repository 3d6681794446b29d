"""A cache file on disk: one private SQLite file of key -> bytes, for one model.

The embedding cache (`raglab.embed.embedding_cache`) keeps vectors in such files, and a
language model's context sentences (`raglab.generate.llm_context`) their text. What they
share, written once here:

- Where: `$RAGLAB_CACHE_DIR`, else the platform's user cache folder (`user_cache_folder`).
- Whose: a file holds one model's entries and says which (`identity`); a file that names
  another model (copied, renamed) is rebuilt, never read. The key is the caller's: a
  digest of everything the entry depends on.
- Private: folder 0700, files 0600. A key is a digest of a text, so whoever can read the
  file can confirm a guessed text. A folder that exists readable by others is made private
  when it holds nothing but cache files; one that also holds other files (say
  RAGLAB_CACHE_DIR=$HOME) is left as it is and not used. A folder or file owned by another
  user, or a folder others may write to (they could plant a file or a link), is not
  trusted: not used, with a warning.
- Bounded: at most `max_entries` entries a file; past it the oldest written are deleted.
- Never worth failing a run for: a corrupt or truncated file is deleted and made again; any
  other failure is a warning, and the caller computes what it could not read.
- Two processes may write at once (SQLite locks; a busy timeout; INSERT OR REPLACE).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import sys
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

CACHE_DIR_VARIABLE = "RAGLAB_CACHE_DIR"
"""Environment variable naming the cache folder; without it, `user_cache_folder()`."""

BUSY_TIMEOUT_S = 30.0
"""How long a process waits for another one's write to finish before giving up."""

LOOKUP_BATCH = 500
"""Keys per SELECT: under SQLite's limit on parameters in one statement (999 in old builds)."""

FOLDER_MODE = 0o700
FILE_MODE = 0o600
"""The cache's folder and files are its owner's alone (the module docstring says why)."""

CACHE_SUFFIXES = (".sqlite", ".sqlite-journal", ".sqlite-wal", ".sqlite-shm")
"""Names of the files the cache writes: a folder holding only these is the cache's own."""


def user_cache_folder(system: str = sys.platform) -> Path:
    """raglab's folder in the user's cache: XDG_CACHE_HOME or ~/.cache on Linux and the
    like, ~/Library/Caches on macOS, %LOCALAPPDATA% on Windows.

    >>> user_cache_folder("darwin") == Path.home() / "Library" / "Caches" / "raglab"
    True
    """
    if system == "win32":
        local = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(local) / "raglab" / "Cache"
    if system == "darwin":
        return Path.home() / "Library" / "Caches" / "raglab"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = (
        Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    )  # the XDG spec: absolute only
    return base / "raglab"


def default_folder() -> Path:
    """`$RAGLAB_CACHE_DIR`, else `user_cache_folder()`."""
    return Path(os.environ.get(CACHE_DIR_VARIABLE) or user_cache_folder())


class ForeignFile(sqlite3.DatabaseError):
    """The file records another model's identity: its entries are not this model's."""


@dataclass(frozen=True, slots=True)
class CacheFile:
    """One model's entries: `read` the ones found, `write` new ones (oldest evicted past
    `max_entries`). Every failure is a warning and an empty answer, never an error."""

    path: Path
    identity: str
    max_entries: int

    def read(self, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        """The stored bytes of the `keys` found; whatever is not bytes is left out."""
        found: dict[bytes, bytes] = {}
        with _Connection(self.path, self.identity) as db:
            if db is None:
                return found
            distinct = list(dict.fromkeys(keys))
            for start in range(0, len(distinct), LOOKUP_BATCH):
                batch = distinct[start : start + LOOKUP_BATCH]
                marks = ",".join("?" * len(batch))
                rows = db.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", batch)
                found.update((key, blob) for key, blob in rows if isinstance(blob, bytes))
        return found

    def write(self, entries: Mapping[bytes, bytes]) -> None:
        with _Connection(self.path, self.identity) as db:
            if db is not None and entries:
                # REPLACE: a key is only written when its entry was missing or discarded.
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", entries.items())
                _evict_oldest(db, self.max_entries)
                db.commit()


def _evict_oldest(db: sqlite3.Connection, max_entries: int) -> None:
    """Delete the oldest-written entries past `max_entries` (a new row takes the highest
    rowid, so rowid order is the order of writing)."""
    [(count,)] = db.execute("SELECT count(*) FROM vectors")
    if count > max_entries:
        db.execute(
            "DELETE FROM vectors WHERE rowid IN (SELECT rowid FROM vectors ORDER BY rowid LIMIT ?)",
            (count - max_entries,),
        )


class _Connection:
    """`with _Connection(path, identity) as db`: an open cache, or None (after a warning).

    A corrupt file, or one of another model, is deleted and made again once; any other
    SQLite failure inside the block is reported and swallowed.
    """

    def __init__(self, path: Path, identity: str) -> None:
        self.path, self.identity = path, identity
        self.db: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection | None:
        for attempt in range(2):
            try:
                self.db = _open(self.path, self.identity)
                return self.db
            except (sqlite3.Error, OSError) as error:
                self._close()
                if attempt == 0 and _is_corrupt(error):
                    _warn(self.path, error, "rebuilding it")
                    _delete(self.path)
                else:
                    _warn(self.path, error, "going on without it")
        return None

    def __exit__(self, kind: type | None, error: BaseException | None, _tb: object) -> bool:
        self._close()
        if isinstance(error, sqlite3.Error):
            _warn(self.path, error, "deleting it" if _is_corrupt(error) else "going on without it")
            if _is_corrupt(error):
                _delete(self.path)
            return True  # swallowed: the caller computes what it could not read
        return False

    def _close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def _open(path: Path, identity: str) -> sqlite3.Connection:
    _private_folder(path.parent)
    _private_file(path)
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
    try:  # a file that is not a database, or a truncated one, fails here
        # No wait for the disk on every write (one per batch of texts): a cache may lose its
        # last writes when the machine crashes, and a file left corrupt is rebuilt.
        db.execute("PRAGMA synchronous = OFF")
        db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB)")
        db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
        found = db.execute("SELECT value FROM meta WHERE name = 'identity'").fetchone()
        if found is None:  # a new file (or one an older raglab made): it is this model's
            db.execute("INSERT OR IGNORE INTO meta VALUES ('identity', ?)", (identity,))
            db.commit()
            found = db.execute("SELECT value FROM meta WHERE name = 'identity'").fetchone()
        recorded = found[0]
        if recorded != identity:
            raise ForeignFile(f"it holds the entries of {str(recorded)[:80]!r}")
    except sqlite3.Error:
        db.close()
        raise
    return db


def _private_folder(folder: Path) -> None:
    """Create `folder` private, or make it private; PermissionError when it is not to be
    trusted (another user's, or writable by others) or not the cache's own (it holds other
    files, so its permissions are not ours to change)."""
    folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    info = folder.stat()
    _check_owner(folder, info)
    mode = stat.S_IMODE(info.st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PermissionError(
            f"folder {str(folder)!r} can be written by other users (mode {mode:o}): not trusted; "
            f"make it private (chmod 700) or set {CACHE_DIR_VARIABLE} to a folder of your own"
        )
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
    A file of another user is refused: its entries could be anything.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    try:
        info = os.fstat(fd)
        _check_owner(path, info)
        if stat.S_IMODE(info.st_mode) & ~FILE_MODE:
            path.chmod(FILE_MODE)
    finally:
        os.close(fd)


def _check_owner(path: Path, info: os.stat_result) -> None:
    if hasattr(os, "getuid") and info.st_uid != os.getuid():  # Windows has no owner ids
        raise PermissionError(f"{str(path)!r} belongs to another user: not trusted")


def _is_corrupt(error: Exception) -> bool:
    """Corruption ("file is not a database", "malformed", another model's file), not a lock
    or a permission.

    Subtle: OperationalError (locked, cannot open) is a subclass of DatabaseError, and
    such a file must not be deleted, so the test is on the exact class.
    """
    return type(error) in (sqlite3.DatabaseError, ForeignFile)


def _delete(path: Path) -> None:
    """The cache file and any journal left beside it (a stale journal would be replayed)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(OSError):  # cannot delete: the next open fails and says so
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def _warn(path: Path, error: Exception, action: str) -> None:
    warnings.warn(f"cache {str(path)!r} unusable ({error}): {action}", stacklevel=4)
