"""Lost in the middle: one document moved through a long prompt, from the start to the end.

Language models read the start and the end of a long context better than its middle
("Lost in the Middle", Liu et al., 2023). To measure it, the relevant document is put at a
relative position of the prompt (0: first, 1: last, 0.5: the middle) and everything else
keeps its order. The offline extractive answerer scores every sentence on its own, so its
answers should not move with the position at all; a model may.

>>> from raglab.records import Chunk, Hit
>>> hits = [Hit(Chunk(f"{d}.md", 0, d, 0, 1), 1.0) for d in "abcde"]
>>> [h.chunk.doc_id for h in move_to(hits, "a.md", 0.5)]
['b.md', 'c.md', 'a.md', 'd.md', 'e.md']
>>> [h.chunk.doc_id for h in move_to(hits, "c.md", 1.0)]
['a.md', 'b.md', 'd.md', 'e.md', 'c.md']
"""

from __future__ import annotations

from collections.abc import Sequence

from raglab.records import Hit
from raglab.validation import check_int, check_number

DEFAULT_POSITIONS = (0.0, 0.25, 0.5, 0.75, 1.0)


def place(position: float, count: int) -> int:
    """The index a relative `position` (0 to 1) names among `count` places, rounded half up."""
    check_number("position", position, minimum=0, maximum=1)
    check_int("count", count, minimum=1)
    return int(position * (count - 1) + 0.5)


def move_to(sources: Sequence[Hit], doc_id: str, position: float) -> tuple[Hit, ...]:
    """`sources` with `doc_id`'s source moved to `position` (0: first, 1: last), the rest in order."""
    moving = [hit for hit in sources if hit.chunk.doc_id == doc_id]
    if not moving:
        raise ValueError(f"{doc_id!r} is not among the prompt's sources")
    rest = [hit for hit in sources if hit.chunk.doc_id != doc_id]
    at = place(position, len(sources))
    return (*rest[:at], *moving, *rest[at:])
