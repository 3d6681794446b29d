"""How the Qdrant store searches: dense candidates, BM25 as sparse vectors, hybrid in the server.

Every query carries the access filter inside it (`raglab.store.qdrant_store.readable_filter`):
Qdrant never scores a point the asker may not read, in a prefetch or in the fused query.

Keyword search in the server. Each chunk's point holds a sparse vector, `SPARSE`:
- indices: the chunk's words by raglab's tokenizer (`raglab.text.tokenize`), each hashed to
  32 bits (`term_id`; Qdrant's indices are u32). Two words with one id count as one word:
  about N²/2³³ colliding pairs are expected among N distinct words, none in the sample
  corpus (the README's Benchmarks section).
- values: BM25's document side, `raglab.retrieve.bm25.term_saturation` with raglab's k1 and b and
  an avgdl fixed when the point is written: the mean length of the chunks that every user
  of the chunk's tenant may read (those without groups). raglab's own avgdl is over the
  asker's readable chunks; for an asker without groups the two are equal. A commit that
  moves a tenant's avgdl rewrites that tenant's sparse vectors (`rewrite_stale`); of the
  avgdl choices tried, it kept most top-5 rankings identical to raglab's (README, Benchmarks).
- the question: each distinct word's id, its value the word's count (a repeated word counts
  each time, as in raglab's BM25). Qdrant's IDF modifier multiplies each word by
  ln(1 + (N - df + 0.5) / (df + 0.5)), Lucene's idf, and `IdfCorpusParams` counts N and df
  over the readable points only: another tenant's chunks change no score.

Hybrid in the server: one query, a dense and a sparse prefetch (each k * 4 deep, as
`raglab.query`), fused by Qdrant's RRF. Qdrant counts ranks from 0, so its k is
raglab's `RRF_K` + 1: the same 1 / (60 + rank). Equal scores are put in raglab's order.

Decision: the default stays "exact", because server mode's BM25 answers are not
identical to the SQLite store's (its scores are Qdrant's float32 sums, and an asker with
groups gets another avgdl) and in local mode it is slower, scanning every point in Python;
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
from raglab.retrieve.bm25 import BM25, term_saturation
from raglab.retrieve.fusion import CANDIDATES_PER_RANKER, RRF_K
from raglab.retrieve.vectors import normalise
from raglab.store._qdrant_points import SPARSE_NAME as SPARSE
from raglab.store._qdrant_points import (
    chunk_point,
    dense,
    field_is,
    from_payload,
    qdrant,
    store_order,
)
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


def query_vector(question: str) -> Any | None:
    """The question's sparse vector (a word's count as its value), None when it has no word."""
    counts, _ = term_counts(question)
    if not counts:
        return None
    ids = sorted(counts)
    return qdrant().models.SparseVector(indices=ids, values=[float(counts[i]) for i in ids])


def open_avgdl(chunks: Iterable[tuple[str, tuple[str, ...], int]]) -> dict[str, float]:
    """Each tenant's avgdl from (tenant, groups, length) rows: over its chunks without groups,
    or over all its chunks when every one has groups (1.0 for a tenant of empty chunks)."""
    rows = list(chunks)
    avgdl = {}
    for tenant in sorted({row[0] for row in rows}):
        lengths = [n for t, groups, n in rows if t == tenant and not groups]
        lengths = lengths or [n for t, _, n in rows if t == tenant]
        avgdl[tenant] = (sum(lengths) / len(lengths)) or 1.0
    return avgdl


SPARSE_FIELDS = ("tenant", "groups", "length", "avgdl")
"""What a commit reads of every chunk kept to decide whose sparse vectors to rewrite."""


def chunk_points(
    added: list[tuple[Chunk, np.ndarray]], kept: list[Any]
) -> tuple[list[Any], dict[str, float]]:
    """The points of the `added` chunks (with their vectors), and each tenant's avgdl over
    them and the points `kept` (read with `SPARSE_FIELDS`)."""
    counted = [(chunk, vector, *term_counts(chunk.indexed_text)) for chunk, vector in added]
    avgdl = open_avgdl(
        [(p.payload["tenant"], p.payload["groups"], p.payload["length"]) for p in kept]
        + [(chunk.tenant, chunk.groups, length) for chunk, _, _, length in counted]
    )
    points = [
        chunk_point(c, v, document_vector(counts, n, avgdl[c.tenant]), avgdl[c.tenant], n)
        for c, v, counts, n in counted
    ]
    return points, avgdl


def rewrite_stale(client: Any, collection: str, kept: list[Any], avgdl: dict[str, float]) -> None:
    """Rewrite the sparse vectors of the `kept` points (read with tenant, groups, length and
    avgdl) that were written with another avgdl than their tenant's now.

    Subtle: each point records the avgdl of its sparse vector, so a commit cut short here
    leaves points the next commit finds stale again, never a wrong record."""
    models = qdrant().models
    stale: dict[float, list[Any]] = {}
    for p in kept:
        wanted = avgdl[p.payload["tenant"]]
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
            with_payload=True,
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
        if client.count(
            collection,
            count_filter=models.Filter(must=[readable, field_is("stems", stem)]),
            exact=True,
        ).count
    )


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
    query = query_vector(question)
    if query is None or not client.collection_exists(collection):
        return []
    models = qdrant().models

    def fetch(limit: int) -> list[Any]:
        points: list[Any] = client.query_points(
            collection,
            query=query,
            using=SPARSE,
            query_filter=shown,  # access and versions decided inside the query, before scoring
            search_params=models.SearchParams(idf=models.IdfCorpusParams(corpus=readable)),
            limit=limit,
            with_payload=True,
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
    sparse = query_vector(question)
    if sparse is not None:
        idf = models.SearchParams(idf=models.IdfCorpusParams(corpus=readable))
        prefetch.append(
            models.Prefetch(query=sparse, using=SPARSE, filter=shown, limit=depth, params=idf)
        )

    def fetch(limit: int) -> list[Any]:
        points: list[Any] = client.query_points(
            collection,
            prefetch=prefetch,
            query=models.RrfQuery(rrf=models.Rrf(k=RRF_K + 1)),  # ranks from 0: 1 / (60 + rank)
            query_filter=shown,
            limit=limit,
            with_payload=True,
        ).points
        return points

    return ranked(candidates(fetch, k), lambda c: c.id, float)[:k]  # RRF's tie rule: chunk id


def ranked(
    points: list[Any], tie: Callable[[Chunk], Any], precision: Callable[[float], Any]
) -> list[Hit]:
    """Hits best first by Qdrant's score (rounded to `precision`), equal scores in `tie` order."""
    hits = [Hit(from_payload(Chunk, p.payload), float(precision(p.score))) for p in points]
    return sorted(hits, key=lambda hit: (-hit.score, tie(hit.chunk)))
