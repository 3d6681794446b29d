"""Stems: the words a question and a source share, whatever their endings; a chunk's stems.

The offline answerer asks whether a question's words appear anywhere the asker may read
(`raglab.generate.abstention`); an index keeps, per access partition, the stems its chunks
use (`raglab.store.sqlite_stems`, and the Qdrant store's points). All three read a chunk the
same way, here: its title, heading and text, stemmed by `content_stems`.

>>> from raglab.records import Chunk
>>> sorted(chunk_stems(Chunk("leave.md", 0, "Ten days of leave.", 0, 18, title="Leave policy")))
['day', 'leav', 'policy', 'ten']
"""

from __future__ import annotations

from functools import lru_cache

from raglab.records import Chunk
from raglab.text import STOPWORDS, tokenize


def stem(word: str) -> str:
    """A light suffix stripper, so "days" matches "day" and "requested" matches "request".

    Rules in order: Harman's S-stemmer (1991: -ies -> -y, else a final s dropped unless
    the word ends in -us or -ss), then -ied -> -y, -ing / -ed dropped (not after e: "need"
    stays), then a final -e dropped, so "leave", "leaves" and "leaving" all become "leav".
    Crude next to Porter's stemmer, but every rule fits on one line and can be checked by hand.

    >>> [stem(w) for w in ["days", "policies", "employees", "requested", "leaving", "need"]]
    ['day', 'policy', 'employe', 'request', 'leav', 'need']
    """
    w = word
    if len(w) > 3:
        if w.endswith("ies") and not w.endswith(("eies", "aies")):
            w = w[:-3] + "y"
        elif w.endswith("s") and not w.endswith(("us", "ss")):
            w = w[:-1]  # Harman's -es -> -e and -s -> drop are the same cut: the final s
    if w.endswith("ied") and len(w) > 4:
        w = w[:-3] + "y"
    else:
        for suffix in ("ing", "ed"):
            if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("e" + suffix):
                w = w[: -len(suffix)]
                break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def content_stems(text: str) -> frozenset[str]:
    """The stems of the words of `text` that carry meaning (no `STOPWORDS`, no 1-letter words).

    >>> sorted(content_stems("How many days of annual leave do I get?"))
    ['annual', 'day', 'leav']
    """
    words = set(tokenize(text))  # each word once: a chunk repeats many of its words
    return frozenset(
        _cached_stem(w) for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())
    )


# Indexing stems every chunk (`raglab.ingest.stems`): a corpus uses far fewer distinct
# words than it holds, so each is stemmed once.
_cached_stem = lru_cache(maxsize=1 << 16)(stem)


def chunk_stems(chunk: Chunk) -> frozenset[str]:
    """The content stems of one chunk's title, heading and text."""
    return content_stems(f"{chunk.title} {chunk.heading} {chunk.text}")
