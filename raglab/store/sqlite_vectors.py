"""The SQLite index's vectors as a memory-mapped file beside it, for a cold search.

Reading every vector blob out of SQLite and copying it into one matrix costs a cold
`raglab ask` time and memory in proportion to the corpus. So after every write the store
also writes its vectors, in store order, to `<index>.<generation>.vectors.npy`, and each
row's chunk id and access partition to `<index>.<generation>.rows.npy`; a search maps
them (`np.load(mmap_mode="r")`): the operating system pages in what is read, nothing is
copied, and the eligible rows are scored a block at a time.

The SQLite file stays the one truth. `generation` names its state: a random name
written into the index's meta table with every write, in the same transaction, and
SQLite's change counter, so files of any other generation are stale and never read
(they are deleted when the next ones are written; a commit that changes no chunk, a
conversation's turn, renames them to the new counter instead: `carry_over`); a missing file (a crash between commit and
writing it, a copied index) is rebuilt from SQLite, or, in a folder we may not write,
held in memory. The files are a cache, never trusted with access: files that do not fit
the index (another index's, an edited partition column: `fits`) are rebuilt too, and
every hit a search finds in them is checked against SQLite before it leaves the store.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from raglab.retrieve._fast import top_k  # the reference's answer, faster
from raglab.retrieve.vectors import select_top_k
from raglab.store.errors import StoreError
from raglab.store.sqlite_postings import part_key
from raglab.store.sqlite_schema import REBUILD

BLOCK_ROWS = 32_768
"""Eligible rows scored at a time: the copy a block needs stays small (48 MB at dim 384)."""


@dataclass(frozen=True)
class VectorFile:
    """Every vector in store order (read-only, usually memory-mapped), with its chunk id and part."""

    matrix: np.ndarray  # (n, dim) float32
    rows: np.ndarray  # (n, 2) int64: chunk id, partition id

    def search(
        self, query: np.ndarray, parts: set[int], k: int, *, hidden: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Top-k among rows of `parts`, less the chunk ids in `hidden`: (store positions,
        chunk ids, float32 cosines), best first.

        The same hits as `top_k` over the eligible rows copied out at once: scores are
        computed row by row (`raglab.retrieve.vectors.exact_scores`), and the blocks' winners are
        merged by score, then store position.
        """
        eligible: np.ndarray = np.isin(self.rows[:, 1], np.fromiter(parts, np.int64))
        if hidden is not None and hidden.size:  # documents superseded for this asker
            eligible &= ~np.isin(self.rows[:, 0], hidden)
        eligible = np.flatnonzero(eligible)
        if not eligible.size:
            return eligible, eligible, np.empty(0, np.float32)
        every_row = eligible.size == len(self.rows)
        block_positions: list[np.ndarray] = []
        block_scores: list[np.ndarray] = []
        for start in range(0, eligible.size, BLOCK_ROWS):
            block = eligible[start : start + BLOCK_ROWS]
            # Every row eligible: a slice of the mapped file, no copy; else the block's rows.
            rows = self.matrix[start : start + block.size] if every_row else self.matrix[block]
            found = top_k(query, rows, k, normalised=True)
            block_positions.append(block[found.indices])
            block_scores.append(found.scores)
        positions, scores = np.concatenate(block_positions), np.concatenate(block_scores)
        order = np.argsort(positions, kind="stable")  # ties go to the lower store position
        positions, scores = positions[order], scores[order]
        chosen, best = select_top_k(scores, k)
        return positions[chosen], self.rows[positions[chosen], 0], best


def vector_file(
    con: sqlite3.Connection, index: Path, generation: str, dim: int, *, rewrite: bool = False
) -> VectorFile:
    """The vectors of `generation`, mapped from their files; written first if missing, if
    they do not fit the index (`fits`), or on request (`rewrite`: a search caught them lying)."""
    vectors, rows = _paths(index, generation)
    found = None if rewrite else _mapped(vectors, rows)
    if found is not None and fits(con, found, dim):
        return found
    try:
        write_vector_file(con, index, generation, dim)
    except OSError:  # a folder we may not write in: keep this process's copy in memory
        return _read_rows(con, index, np.empty((_count(con), dim), np.float32))
    return VectorFile(np.load(vectors, mmap_mode="r"), np.load(rows, mmap_mode="r"))


def _mapped(vectors: Path, rows: Path) -> VectorFile | None:
    """Both files mapped, or None if either is missing or is no .npy file at all."""
    try:
        return VectorFile(np.load(vectors, mmap_mode="r"), np.load(rows, mmap_mode="r"))
    except (OSError, ValueError, EOFError):
        return None


def fits(con: sqlite3.Connection, found: VectorFile, dim: int) -> bool:
    """True when the files have this index's shape: one float32 row of `dim` per chunk, and
    in each access partition as many rows as the index counts there (table `parts`).

    One pass over the rows' partition column: it catches another index's files and most
    edits. The files still never decide who reads what: `SQLiteStore.search` checks every
    hit against the chunk's own tenant and groups in the index.
    """
    counts = dict(con.execute("SELECT id, n_chunks FROM parts WHERE n_chunks > 0").fetchall())
    n = sum(counts.values())
    matrix, rows = found.matrix, found.rows
    if matrix.dtype != np.float32 or matrix.shape != (n, dim):
        return False
    if rows.dtype != np.int64 or rows.shape != (n, 2):
        return False
    parts, sizes = np.unique(rows[:, 1], return_counts=True)
    return dict(zip(parts.tolist(), sizes.tolist(), strict=True)) == counts


def write_vector_file(con: sqlite3.Connection, index: Path, generation: str, dim: int) -> None:
    """Write the files of `generation` from the index's rows, and delete other generations'.

    Each file is written under a temporary name, flushed to disk and renamed into place, so
    a reader (another process, a copy being made) sees a whole file or none; there must be
    room for both first (`OSError` ENOSPC otherwise, before a byte is written: a memory map
    on a full disk ends the process with SIGBUS instead of an error).
    """
    count = _count(con)
    _check_room(index, needed=count * dim * 4 + count * 16 + 2 * 4096)
    vectors, rows = _paths(index, generation)
    with _temporary(index) as tmp:
        matrix = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(count, dim))
        data = _read_rows(con, index, matrix)
        matrix.flush()
        del matrix
        with _temporary(index) as tmp_rows:
            with tmp_rows.open("wb") as file:
                np.save(file, data.rows)
                file.flush()
                os.fsync(file.fileno())
            os.replace(tmp_rows, rows)
        with tmp.open("rb+") as file:
            os.fsync(file.fileno())
        os.replace(tmp, vectors)  # the vectors last: both files exist only once both are whole
    for stale in index.parent.glob(f"{glob.escape(index.name)}.*.npy"):
        if _written_by_raglab(stale, index) and not stale.name.startswith(
            f"{index.name}.{generation}."
        ):
            stale.unlink(missing_ok=True)


def _written_by_raglab(path: Path, index: Path) -> bool:
    """True only for a name this module writes: `<index>.<32 hex>-<counter>.vectors.npy` or
    `.rows.npy`. A user's own `<index>.backup.old.npy` beside the index is never touched."""
    name = re.escape(index.name)
    return (
        re.fullmatch(rf"{name}\.[0-9a-f]{{32}}-\d+\.(?:vectors|rows)\.npy", path.name) is not None
    )


def _check_room(index: Path, *, needed: int) -> None:
    free = shutil.disk_usage(index.parent).free
    if free < needed:
        raise OSError(
            errno.ENOSPC,
            f"no room beside the index for its vector file: {needed:,} bytes needed, "
            f"{free:,} free in {str(index.parent)!r}",
        )


@contextmanager
def _temporary(index: Path) -> Iterator[Path]:
    """A new hidden file beside the index, readable by whoever may read the index; removed
    on the way out unless it was renamed into place."""
    handle, name = tempfile.mkstemp(dir=index.parent, prefix=f".{index.name}.", suffix=".npy")
    os.close(handle)
    path = Path(name)
    try:
        os.chmod(path, index.stat().st_mode & 0o666)
        yield path
    finally:
        path.unlink(missing_ok=True)


def _read_rows(con: sqlite3.Connection, index: Path, matrix: np.ndarray) -> VectorFile:
    """Every row in store order, the vectors read a block at a time into `matrix`."""
    parts = {
        (tenant, groups): part
        for part, tenant, groups in con.execute("SELECT id, tenant, groups FROM parts")
    }
    n, dim = matrix.shape
    rows = np.empty((n, 2), np.int64)
    cursor = con.execute("SELECT id, tenant, groups, vector FROM chunks ORDER BY doc_id, idx")
    start = 0
    while batch := cursor.fetchmany(BLOCK_ROWS):
        end = start + len(batch)
        blob = b"".join(row[3] for row in batch)
        if len(blob) != len(batch) * dim * 4:
            raise StoreError(
                f"index file {str(index)!r} is corrupt (vector blobs do not "
                f"match dim={dim}): {REBUILD}"
            )
        matrix[start:end] = np.frombuffer(blob, "<f4").reshape(len(batch), dim)
        rows[start:end, 0] = [row[0] for row in batch]
        rows[start:end, 1] = [
            parts[part_key(tenant, json.loads(groups))] for _, tenant, groups, _ in batch
        ]
        start = end
    return VectorFile(matrix, rows)


def carry_over(index: Path, generation: str, before: int, after: int) -> None:
    """After a commit that changed no chunk (a conversation's turn: `raglab.conversation`),
    rename the vector files of `<generation>-<before>` to `<generation>-<after>`, so the next
    search maps them instead of writing every vector again. Safe to lose a race: a file
    whose name does not match the index's state is stale, never read, and rebuilt."""
    if before == after:
        return
    old_vectors, old_rows = _paths(index, f"{generation}-{before}")
    new_vectors, new_rows = _paths(index, f"{generation}-{after}")
    try:
        os.replace(old_rows, new_rows)
        os.replace(old_vectors, new_vectors)  # the vectors last, as when they are written
    except OSError:
        return  # missing (never written) or not ours to rename: the next search rebuilds


def change_counter(index: Path) -> int:
    """SQLite's file change counter (header bytes 24-27), moved by every commit to the file."""
    with index.open("rb") as file:
        file.seek(24)
        return int.from_bytes(file.read(4), "big")


def _count(con: sqlite3.Connection) -> int:
    count: int = con.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    return count


def _paths(index: Path, generation: str) -> tuple[Path, Path]:
    stem = f"{index.name}.{generation}"
    return index.with_name(f"{stem}.vectors.npy"), index.with_name(f"{stem}.rows.npy")
