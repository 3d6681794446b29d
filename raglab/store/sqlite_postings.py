"""BM25 kept in the SQLite index: keyword search without refitting on every question.

`raglab.retrieve.bm25.BM25` is fitted on the chunks a principal may read, so that no chunk they
may not read shifts idf or the average length. Fitting reads every readable chunk: on a
cold `raglab ask` that is most of the time at 20,000 documents. The index file keeps
instead, per access partition (one tenant with one set of groups, table `parts`), its
chunk count and token count, and per (word, partition) the postings: which chunks hold
the word, how often, and each chunk's length. A question reads the postings of its own
words in the partitions the principal may read, and sums the partitions' statistics:
N, avgdl and df over exactly the readable chunks, so the scores are BM25's, bit for bit
(the same functions, the same float32 weights, the same order of summation).

Writes are collected during a transaction and merged into the postings once, before it
commits (`Postings.flush`): rewriting a frequent word's postings once per document
would cost the square of the corpus.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from itertools import chain

import numpy as np

from raglab.records import Partition, Principal
from raglab.retrieve.bm25 import BM25, _count_pairs, lucene_idf, term_saturation
from raglab.text import tokenize

RECORD = np.dtype([("chunk", "<i8"), ("tf", "<i4"), ("length", "<i4")])
"""One posting as stored: a chunk holding the word, the word's count, the chunk's length."""

_PARAMS = BM25()  # the retriever's BM25 settings (k1, b): the defaults


def part_key(tenant: str, groups: Sequence[str]) -> tuple[str, str]:
    """A partition's (tenant, groups) as stored: the groups sorted, without repeats, as JSON."""
    part = Partition(tenant, tuple(groups))
    return part.tenant, part.groups_json


class Postings:
    """The postings and partition statistics of one index file, and their pending changes."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self._con = con
        self._added: list[tuple[list[str], np.ndarray, np.ndarray]] = []  # (words, keys, records)
        self._removed: set[int] = set()  # chunk ids
        self._touched: set[tuple[str, int]] = set()  # (word, part) holding a removed chunk

    # -- writing (inside the store's transaction)

    def add(self, ids: Sequence[int], texts: Sequence[str], parts: Sequence[int]) -> None:
        """New chunks: their ids, texts and partitions."""
        docs = [tokenize(text) for text in texts]
        lengths = np.fromiter(map(len, docs), np.int64, len(docs))
        self._count(parts, lengths, +1)
        tokens = list(chain.from_iterable(docs))
        words = sorted(set(tokens))
        word_of = {w: i for i, w in enumerate(words)}
        word_ids = np.fromiter(map(word_of.__getitem__, tokens), np.int64, len(tokens))
        rows = np.repeat(np.arange(len(docs), dtype=np.int64), lengths)
        pair_words, pair_rows, counts = _count_pairs(word_ids, rows, len(docs))
        records = np.empty(len(pair_rows), RECORD)
        records["chunk"] = np.asarray(ids, np.int64)[pair_rows]
        records["tf"] = counts
        records["length"] = lengths[pair_rows]
        keys = pair_words * (1 << 32) + np.asarray(parts, np.int64)[pair_rows]  # (word, part)
        self._added.append((words, keys, records))

    def remove(self, ids: Sequence[int], texts: Sequence[str], parts: Sequence[int]) -> None:
        """Chunks about to be deleted: their ids, texts and partitions."""
        docs = [tokenize(text) for text in texts]
        self._count(parts, np.fromiter(map(len, docs), np.int64, len(docs)), -1)
        self._removed.update(ids)
        for doc, part in zip(docs, parts, strict=True):
            self._touched.update((word, part) for word in set(doc))

    def flush(self) -> None:
        """Merge the pending changes into the stored postings (before the commit)."""
        added = self._added_by_key()
        removed = np.fromiter(self._removed, np.int64, len(self._removed))
        first = self._con.execute("SELECT NOT EXISTS (SELECT 1 FROM postings)").fetchone()[0]
        emptied: list[tuple[str, int]] = []

        def merged_postings() -> Iterator[tuple[str, int, bytes]]:  # streamed: never all at once
            for key in sorted(self._touched | set(added)):
                blobs = added.get(key, [])
                if first and not removed.size and len(blobs) == 1:  # a first build: as it is
                    yield *key, blobs[0]
                    continue
                stored = [] if first else list(self._read(key[0], [key[1]]).values())
                merged = np.concatenate([*stored, *(np.frombuffer(b, RECORD) for b in blobs)])
                if removed.size:  # after the merge: a chunk added and deleted in one go is gone
                    merged = merged[~np.isin(merged["chunk"], removed)]
                if merged.size:
                    yield *key, merged.tobytes()
                else:
                    emptied.append(key)

        self._con.executemany("INSERT OR REPLACE INTO postings VALUES (?, ?, ?)", merged_postings())
        self._con.executemany("DELETE FROM postings WHERE term = ? AND part = ?", emptied)
        self.discard()

    def _added_by_key(self) -> dict[tuple[str, int], list[bytes]]:
        """The pending new postings as packed records per (word, part), one entry per `add`."""
        added: dict[tuple[str, int], list[bytes]] = {}
        for words, keys, records in self._added:
            order = np.argsort(keys, kind="stable")
            keys, packed = keys[order], records[order].tobytes()
            starts = np.flatnonzero(np.diff(keys, prepend=-1)).tolist()
            size = RECORD.itemsize
            for key, start, end in zip(keys[starts].tolist(), starts, starts[1:] + [len(keys)]):
                word, part = divmod(key, 1 << 32)
                added.setdefault((words[word], part), []).append(packed[start * size : end * size])
        return added

    def discard(self) -> None:
        """Forget the pending changes (after a flush, or when the transaction rolls back)."""
        self._added, self._removed, self._touched = [], set(), set()

    def part_ids(self, keys: Sequence[tuple[str, str]]) -> list[int]:
        """The id of each (tenant, groups JSON) partition, creating the ones not stored yet."""
        known = dict(self._con.execute("SELECT tenant || char(0) || groups, id FROM parts"))
        for tenant, groups in sorted(set(keys)):
            if f"{tenant}\0{groups}" not in known:
                cursor = self._con.execute(
                    "INSERT INTO parts VALUES (NULL, ?, ?, 0, 0)", (tenant, groups)
                )
                known[f"{tenant}\0{groups}"] = cursor.lastrowid
        return [known[f"{tenant}\0{groups}"] for tenant, groups in keys]

    def _count(self, parts: Sequence[int], lengths: np.ndarray, sign: int) -> None:
        totals: dict[int, list[int]] = {}
        for part, length in zip(parts, lengths.tolist(), strict=True):
            total = totals.setdefault(part, [0, 0])
            total[0] += 1
            total[1] += length
        self._con.executemany(
            "UPDATE parts SET n_chunks = n_chunks + ?, n_tokens = n_tokens + ? WHERE id = ?",
            [(sign * n, sign * tokens, part) for part, (n, tokens) in totals.items()],
        )

    # -- reading

    def readable_parts(
        self, principal: Principal, only: Partition | None = None
    ) -> dict[int, tuple[int, int]]:
        """Partition id -> (chunks, tokens) for the partitions `principal` may read (of
        them, partition `only` alone, if given)."""
        rows = self._con.execute(
            "SELECT id, groups, n_chunks, n_tokens FROM parts WHERE tenant = ? AND n_chunks > 0",
            (principal.tenant,),
        )
        return {
            part: (n_chunks, n_tokens)
            for part, groups, n_chunks, n_tokens in rows
            if (groups == "[]" or not principal.groups.isdisjoint(json.loads(groups)))
            and (only is None or (only.tenant, only.groups_json) == (principal.tenant, groups))
        }

    def scores(self, question: str, principal: Principal) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, float32 BM25 scores) of the readable chunks holding a question word.

        Exactly `BM25().fit(readable texts).scores(question)` at those chunks; every
        other readable chunk scores 0.
        """
        parts = self.readable_parts(principal)
        n_docs = sum(n for n, _ in parts.values())
        tokens = tokenize(question)
        if not n_docs or not tokens:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        avgdl = float(sum(t for _, t in parts.values())) / n_docs  # = lengths.mean()
        postings = {
            term: np.concatenate(list(found.values()))
            for term in sorted(set(tokens))
            if (found := self._read(term, list(parts)))
        }
        terms = list(postings)
        df = np.array([len(postings[t]) for t in terms], dtype=np.int64)
        idf = dict(zip(terms, lucene_idf(df, n_docs), strict=True))
        weights = {
            t: (
                idf[t] * term_saturation(p["tf"], p["length"], avgdl, _PARAMS.k1, _PARAMS.b)
            ).astype(np.float32)
            for t, p in postings.items()
        }
        # Each query token (repeats included, in order) adds its weights, as BM25.scores does.
        known = [t for t in tokens if t in postings]
        if not known:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        chunks = np.concatenate([postings[t]["chunk"] for t in known])
        ids, rows = np.unique(chunks, return_inverse=True)
        summed = np.bincount(rows, weights=np.concatenate([weights[t] for t in known]))
        return ids, summed.astype(np.float32)

    def _read(self, term: str, parts: list[int]) -> dict[int, np.ndarray]:
        marks = ", ".join("?" * len(parts))
        rows = self._con.execute(
            f"SELECT part, data FROM postings WHERE term = ? AND part IN ({marks})",
            (term, *parts),
        )
        return {part: np.frombuffer(data, RECORD) for part, data in rows}
