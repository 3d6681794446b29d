"""How the Qdrant store searches: dense candidates, BM25 as sparse vectors, hybrid in the server.

Every query carries the access filter inside it (`raglab.store.qdrant_store.readable_filter`):
Qdrant never scores a point the asker may not read, in a prefetch or in the fused query.

Keyword search in the server. Each chunk's point holds a sparse vector, `SPARSE`:
- indices: the chunk's words by raglab's tokenizer (`raglab.text.tokenize`), each hashed to
  32 bits (`term_id`; Qdrant's indices are u32), also kept in its "terms" payload. Two
  words with one id count as one word: about N²/2³³ colliding pairs are expected among N
  distinct words, none in the sample corpus (the README's Benchmarks section).
- values: BM25's document side, `raglab.retrieve.bm25.term_saturation` with raglab's k1 and b and
  an avgdl fixed when the point is written: the mean length of the chunks of its access
  partition (its tenant and groups) and of its tenant's chunks without groups
  (`partition_avgdl`). Subtle: whoever may read a chunk may read every one of those, so no
  chunk a reader may not read moves a score they see. For an asker without groups this is
  raglab's own avgdl (over the chunks they may read); an asker with groups gets each
  chunk's partition's. A commit that moves a partition's avgdl rewrites its sparse vectors
  (`rewrite_stale`).
- the question: weighed by idf here, per query (`weighted_query`). Qdrant counts, under the
  asker's access filter, N (the chunks they may read) and each question word's df (those of
  them whose "terms" hold it); a word's value is its count (a repeated word counts each
  time, as in raglab's BM25) times Lucene's idf, ln(1 + (N - df + 0.5) / (df + 0.5)).
  Subtle: Qdrant's own IDF modifier is not used. Its statistics are whatever the server
  counts (the whole collection by default; a server that does not know a corpus filter
  ignores it), and a word only a hidden document holds would move every score. Counting
  under the access filter trusts the server with that filter alone, as every search does.

Hybrid in the server: one query, a dense and a sparse prefetch (each k * 4 deep, as
`raglab.query`), fused by Qdrant's RRF. Qdrant counts ranks from 0, so its k is
raglab's `RRF_K` + 1: the same 1 / (60 + rank). Equal scores are put in raglab's order.

Decision: the default stays "exact", because server mode's BM25 answers are not
identical to the SQLite store's (its scores are Qdrant's float32 sums, and an asker with
groups gets other avgdls) and in local mode it is slower, scanning every point in Python;
the figures: `benchmarks/bench_qdrant.py`, `benchmarks/results/qdrant.json`.
Fused in Qdrant (`hybrid_search`): where two chunks tie inside one ranking, Qdrant orders
them its own way, not by store order, so a fused score can differ by one rank's worth.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from raglab.records import Chunk, Hit
from raglab.retrieve._fast import top_k  # the reference's answer, faster
from raglab.retrieve.bm25 import BM25, lucene_idf, term_saturation
from raglab.retrieve.fusion import CANDIDATES_PER_RANKER, RRF_K
from raglab.retrieve.vectors import normalise
from raglab.store._qdrant_points import (
    CHUNK_FIELDS,
    TERMS,
    chunk_point,
    count,
    dense,
    field_is,
    from_payload,
    qdrant,
    store_order,
)
from raglab.store._qdrant_points import SPARSE_NAME as SPARSE
from raglab.text import stable_hash, tokenize

KEYWORD_MODES = ("exact", "server")
"""How the Qdrant store ranks by keyword: "exact", raglab's BM25 fitted on the asker's
readable chunks (scores identical to the other stores'); "server", sparse vectors in Qdrant."""

TIE_ROOM = 8
"""Candidates fetched beyond k, so that points tied with the k-th usually come in one query."""

SCORE_SLACK = 1e-4
"""How far Qdrant's own float32 score may sit from ours: the candidates keep every point
within this of the k-th score, so rounding in Qdrant cannot drop a chunk we would keep."""

REWRITE_BATCH = 256
"""Points per request when sparse vectors are rewritten."""

_BM25 = BM25()  # raglab's k1 and b, written once in raglab.retrieve.bm25


# ---------------------------------------------------------------------------- sparse vectors


def term_id(word: str) -> int:
    """A word's index in the sparse vectors: the low 32 bits of its stable hash.

    >>> term_id("vacation") == term_id("vacation") != term_id("vacations")
    True
    """
    return stable_hash(word) & 0xFFFF_FFFF


def term_counts(text: str) -> tuple[Counter[int], int]:
    """(how often each term id occurs in `text`, how many tokens `text` has)."""
    words = tokenize(text)
    return Counter(map(term_id, words)), len(words)


def document_vector(counts: Counter[int], length: int, avgdl: float) -> Any:
    """A chunk's sparse vector from its `term_counts`: BM25's saturation of each of its
    words, the idf left to Qdrant."""
    ids = sorted(counts)
    tf = np.array([counts[i] for i in ids], dtype=np.float64)
    values = term_saturation(tf, np.full(len(ids), length), avgdl, _BM25.k1, _BM25.b)
    return qdrant().models.SparseVector(indices=ids, values=values.tolist())


Partition = tuple[str, tuple[str, ...]]


def partition(tenant: str, groups: Iterable[str]) -> Partition:
    """An access partition: a tenant and one set of groups (sorted, without repeats)."""
    return tenant, tuple(sorted(set(groups)))


def partition_avgdl(rows: Iterable[tuple[str, Iterable[str], int]]) -> dict[Partition, float]:
    """Each access partition's avgdl, from (tenant, groups, length) rows: the mean length of
    its chunks and its tenant's chunks without groups (1.0 for a partition of empty chunks).

    >>> rows = [("acme", [], 10), ("acme", ["hr"], 20), ("acme", ["board"], 90)]
    >>> partition_avgdl(rows)
    {('acme', ()): 10.0, ('acme', ('board',)): 50.0, ('acme', ('hr',)): 15.0}
    """
    lengths: dict[Partition, list[int]] = {}
    for tenant, groups, length in rows:
        lengths.setdefault(partition(tenant, groups), []).append(length)
    avgdl = {}
    for key in sorted(lengths):
        tenant, groups = key
        counted = lengths[key] + (lengths.get((tenant, ()), []) if groups else [])
        avgdl[key] = (sum(counted) / len(counted)) or 1.0
    return avgdl


SPARSE_FIELDS = ("tenant", "groups", "length", "avgdl")
"""What a commit reads of every chunk kept to decide whose sparse vectors to rewrite."""


def chunk_points(
    added: list[tuple[Chunk, np.ndarray]], kept: list[Any]
) -> tuple[list[Any], dict[Partition, float]]:
    """The points of the `added` chunks (with their vectors), and each access partition's
    avgdl over them and the points `kept` (read with `SPARSE_FIELDS`)."""
    counted = [(chunk, vector, *term_counts(chunk.indexed_text)) for chunk, vector in added]
    avgdl = partition_avgdl(
        [(p.payload["tenant"], p.payload["groups"], p.payload["length"]) for p in kept]
        + [(chunk.tenant, chunk.groups, length) for chunk, _, _, length in counted]
    )
    points = []
    for c, v, counts, n in counted:
        wanted = avgdl[partition(c.tenant, c.groups)]
        points.append(chunk_point(c, v, document_vector(counts, n, wanted), wanted, n))
    return points, avgdl


def rewrite_stale(
    client: Any, collection: str, kept: list[Any], avgdl: dict[Partition, float]
) -> None:
    """Rewrite the sparse vectors of the `kept` points (read with `SPARSE_FIELDS`) that were
    written with another avgdl than their access partition's now.

    Subtle: each point records the avgdl of its sparse vector, so a commit cut short here
    leaves points the next commit finds stale again, never a wrong record."""
    models = qdrant().models
    stale: dict[float, list[Any]] = {}
    for p in kept:
        wanted = avgdl[partition(p.payload["tenant"], p.payload["groups"])]
        if p.payload.get("avgdl") != wanted:
            stale.setdefault(wanted, []).append(p.id)
    for wanted, ids in sorted(stale.items()):
        for start in range(0, len(ids), REWRITE_BATCH):
            batch = ids[start : start + REWRITE_BATCH]
            points = client.retrieve(collection, batch, with_payload=["text"])
            vectors = [
                models.PointVectors(
                    id=p.id,
                    vector={SPARSE: document_vector(*term_counts(p.payload["text"]), wanted)},
                )
                for p in points
            ]
            client.update_vectors(collection, points=vectors, wait=True)
            client.set_payload(collection, payload={"avgdl": wanted}, points=batch, wait=True)


# ---------------------------------------------------------------------------- queries


def candidates(fetch: Callable[[int], list[Any]], k: int) -> list[Any]:
    """The best points by Qdrant's score (`fetch(limit)`): at least k, and every one tied
    with the k-th, even when that takes a deeper query."""
    limit = k + TIE_ROOM
    while True:
        points = fetch(limit)
        if len(points) < limit or points[-1].score < points[k - 1].score - SCORE_SLACK:
            return points
        limit *= 2  # the last candidate may still tie with the k-th: look further


def dense_candidates(
    client: Any, collection: str, query: np.ndarray, readable: Any, k: int, exact: bool
) -> list[Any]:
    """The best points by Qdrant's dense score: at least k, and every one tied with the k-th.
    `raglab.store.qdrant_store` ranks them as every store does."""
    search = qdrant().models.SearchParams(exact=exact)

    def fetch(limit: int) -> list[Any]:
        points: list[Any] = client.query_points(
            collection,
            query=query.tolist(),
            query_filter=readable,  # access decided inside the query, before scoring
            limit=limit,
            with_payload=CHUNK_FIELDS,
            with_vectors=[""],
            search_params=search,
        ).points
        return points

    return candidates(fetch, k)


def dense_hits(
    client: Any, collection: str, query: np.ndarray, shown: Any, k: int, exact: bool
) -> list[Hit]:
    """The top-k chunks `shown` lets through by cosine, ranked as every store ranks:
    Qdrant picks the candidates (`dense_candidates`), `raglab.retrieve.vectors.top_k`
    scores them in store order, so ties go as in the other stores."""
    points = dense_candidates(client, collection, normalise(query), shown, k, exact)
    if not points:
        return []
    # Store order first, so that `top_k`'s tie rule (lower row first) is store order.
    pairs = sorted(
        ((from_payload(Chunk, p.payload), dense(p.vector)) for p in points),
        key=lambda c: store_order(c[0]),
    )
    rows = np.array([vector for _, vector in pairs], dtype=np.float32)
    positions, scores = top_k(query, rows, k, normalised=True)
    return [Hit(pairs[p][0], float(s)) for p, s in zip(positions, scores)]


def counted_stems(
    client: Any, collection: str, readable: Any, stems: Iterable[str]
) -> frozenset[str]:
    """Those of `stems` that a point `readable` lets through holds (in its "stems" payload):
    one count a stem, the access filter inside it."""
    if not client.collection_exists(collection):
        return frozenset()
    models = qdrant().models
    return frozenset(
        stem
        for stem in sorted(set(stems))
        if count(client, collection, models.Filter(must=[readable, field_is("stems", stem)]))
    )


def weighted_query(client: Any, collection: str, question: str, readable: Any) -> Any | None:
    """The question's sparse vector, each word weighed by its count in the question times
    its idf over the chunks `readable` lets through (`lucene_idf`), N and df counted by
    Qdrant under that filter; words no such chunk holds are left out (None if all are)."""
    counts, _ = term_counts(question)
    models = qdrant().models
    ids = sorted(counts)
    df = np.array(
        [count(client, collection, models.Filter(must=[readable, field_is(TERMS, i)])) for i in ids]
    )
    held = np.flatnonzero(df)
    if not len(held):
        return None
    idf = lucene_idf(df[held], count(client, collection, readable))
    weights = [counts[ids[i]] * float(w) for i, w in zip(held, idf)]
    return models.SparseVector(indices=[ids[i] for i in held], values=weights)


def keyword_hits(
    client: Any,
    collection: str,
    question: str,
    k: int,
    min_score: float,
    *,
    readable: Any,
    shown: Any,
) -> list[Hit]:
    """The top-k chunks by BM25 in the server, among those `shown` lets through; idf is
    counted over `readable`, as raglab fits BM25 on the chunks the asker may read."""
    if not client.collection_exists(collection):
        return []
    query = weighted_query(client, collection, question, readable)
    if query is None:
        return []

    def fetch(limit: int) -> list[Any]:
        points: list[Any] = client.query_points(
            collection,
            query=query,
            using=SPARSE,
            query_filter=shown,  # access and versions decided inside the query, before scoring
            limit=limit,
            with_payload=CHUNK_FIELDS,
        ).points
        return points

    # BM25's scores are float32 and equal ones go in store order, as in raglab.retrieve.bm25.
    hits = ranked(candidates(fetch, k), lambda c: (c.doc_id, c.index), np.float32)
    return [hit for hit in hits if hit.score > min_score][:k]


def hybrid_hits(
    client: Any,
    collection: str,
    query: np.ndarray,
    question: str,
    k: int,
    *,
    readable: Any,
    shown: Any,
    exact: bool,
) -> list[Hit]:
    """The top-k chunks by dense and BM25 rankings fused with RRF, all in the server.

    `shown` (the readable chunks less the hidden documents) filters each prefetch and the
    fused query; BM25's idf is counted over `readable`, as raglab fits BM25 on them."""
    if not client.collection_exists(collection):
        return []
    models = qdrant().models
    depth = k * CANDIDATES_PER_RANKER
    prefetch = [
        models.Prefetch(
            query=query.tolist(), filter=shown, limit=depth, params=models.SearchParams(exact=exact)
        )
    ]
    sparse = weighted_query(client, collection, question, readable)
    if sparse is not None:
        prefetch.append(models.Prefetch(query=sparse, using=SPARSE, filter=shown, limit=depth))

    def fetch(limit: int) -> list[Any]:
        points: list[Any] = client.query_points(
            collection,
            prefetch=prefetch,
            query=models.RrfQuery(rrf=models.Rrf(k=RRF_K + 1)),  # ranks from 0: 1 / (60 + rank)
            query_filter=shown,
            limit=limit,
            with_payload=CHUNK_FIELDS,
        ).points
        return points

    return ranked(candidates(fetch, k), lambda c: c.id, float)[:k]  # RRF's tie rule: chunk id


def ranked(
    points: list[Any], tie: Callable[[Chunk], Any], precision: Callable[[float], Any]
) -> list[Hit]:
    """Hits best first by Qdrant's score (rounded to `precision`), equal scores in `tie` order."""
    hits = [Hit(from_payload(Chunk, p.payload), float(precision(p.score))) for p in points]
    return sorted(hits, key=lambda hit: (-hit.score, tie(hit.chunk)))
