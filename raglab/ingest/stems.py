"""The content stems of a chunk: the words it brings to its readers' vocabulary.

The offline answerer asks whether a question's words appear anywhere the asker may read
(`raglab.generate.abstention`); an index keeps, per access partition, the stems its chunks
use (`raglab.store.sqlite_stems`, and the Qdrant store's points). All three read a chunk the
same way, here: its title, heading and text, stemmed by `raglab.text.content_stems`.

>>> from raglab.records import Chunk
>>> sorted(chunk_stems(Chunk("leave.md", 0, "Ten days of leave.", 0, 18, title="Leave policy")))
['day', 'leav', 'policy', 'ten']
"""

from __future__ import annotations

from raglab.records import Chunk
from raglab.text import content_stems


def chunk_stems(chunk: Chunk) -> frozenset[str]:
    """The content stems of one chunk's title, heading and text."""
    return content_stems(f"{chunk.title} {chunk.heading} {chunk.text}")
