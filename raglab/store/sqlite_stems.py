"""The words each access partition uses, kept in the SQLite index for the offline answerer.

The answerer's `known` feature (`raglab.generate.abstention`) asks which of a question's content
stems appear anywhere the asker may read. Collecting them from every readable chunk
(`raglab.generate.abstention.vocabulary`) makes a cold `raglab ask` read the whole corpus. The
index file keeps instead, per (stem, partition), how many chunks use the stem in their
title, heading or text, as `vocabulary` reads them. A deletion lowers the count and a
stem leaves its partition when no chunk there uses it any more, so a lookup answers
exactly what `vocabulary(store.chunks(principal))` would.

Like the postings (`raglab.store.sqlite_postings`), the changes of a transaction are counted
in memory and written once, before it commits (`Stems.flush`).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Collection, Sequence

from raglab.ingest.stems import chunk_stems
from raglab.records import Chunk


class Stems:
    """The (stem, partition) -> chunk counts of one index file, and their pending changes."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self._con = con
        self._pending: Counter[tuple[str, int]] = Counter()  # may go negative: deletions

    # -- writing (inside the store's transaction)

    def add(self, chunks: Sequence[Chunk], parts: Sequence[int]) -> None:
        """New chunks and their partitions."""
        self._change(chunks, parts, +1)

    def remove(self, chunks: Sequence[Chunk], parts: Sequence[int]) -> None:
        """Chunks about to be deleted and their partitions."""
        self._change(chunks, parts, -1)

    def _change(self, chunks: Sequence[Chunk], parts: Sequence[int], sign: int) -> None:
        for chunk, part in zip(chunks, parts, strict=True):
            for stem in chunk_stems(chunk):
                self._pending[stem, part] += sign

    def flush(self) -> None:
        """Write the pending counts (before the commit); stems no chunk uses any more go."""
        changes = [(stem, part, n) for (stem, part), n in sorted(self._pending.items()) if n]
        self._con.executemany(
            "INSERT INTO stems VALUES (?, ?, ?) "
            "ON CONFLICT (stem, part) DO UPDATE SET chunks = chunks + excluded.chunks",
            changes,
        )
        lowered = [(stem, part) for stem, part, n in changes if n < 0]  # only these can reach 0
        self._con.executemany(
            "DELETE FROM stems WHERE stem = ? AND part = ? AND chunks <= 0", lowered
        )
        self.discard()

    def discard(self) -> None:
        """Forget the pending changes (after a flush, or when the transaction rolls back)."""
        self._pending = Counter()

    # -- reading

    def known(self, stems: Collection[str], parts: Collection[int]) -> frozenset[str]:
        """Those of `stems` that some chunk of the partitions `parts` uses."""
        if not stems or not parts:
            return frozenset()
        stem_marks, part_marks = ", ".join("?" * len(stems)), ", ".join("?" * len(parts))
        rows = self._con.execute(
            f"SELECT DISTINCT stem FROM stems WHERE stem IN ({stem_marks}) "
            f"AND part IN ({part_marks})",
            (*stems, *parts),
        )
        return frozenset(stem for (stem,) in rows)
