"""The records that flow through the pipeline.

Every boundary takes and returns these frozen dataclasses, so a learner can print
any stage and see exactly what crossed it. Change one with `dataclasses.replace`.
A score lives beside the thing it scores (`Hit(chunk, score)`), never inside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from raglab.text import content_hash

DEFAULT_TENANT = "default"


@dataclass(frozen=True, slots=True)
class Document:
    """One source file, loaded and validated.

    `id` is the file's POSIX path relative to the corpus folder. `tenant` and `groups`
    decide who may read it (see `raglab.store.access`); they come from front matter, never
    from the text. `supersedes` names the ids of older documents this one replaces
    (see `raglab.store.versions`).
    """

    id: str
    text: str
    title: str = ""
    tenant: str = DEFAULT_TENANT
    groups: tuple[str, ...] = ()
    version: str = "1"
    supersedes: tuple[str, ...] = ()
    hash: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        # Computed once at construction so a changed text always means a changed hash.
        object.__setattr__(self, "hash", content_hash(self.text))


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a document, with where it came from.

    Invariant: `document.text[chunk.start:chunk.end] == chunk.text`.
    Access metadata (tenant, groups) and the document version travel with every chunk,
    so the store can filter without ever going back to the text.

    `context` is empty unless the chunker was contextual (`raglab.ingest.contextual`):
    then it is a short header about the document, which retrieval reads before the text
    (`indexed_text`). What is quoted and cited is always `text`, never the header.
    """

    doc_id: str
    index: int
    text: str
    start: int
    end: int
    heading: str = ""
    title: str = ""
    tenant: str = DEFAULT_TENANT
    groups: tuple[str, ...] = ()
    doc_version: str = "1"
    # Left out of the printed form: most chunks have none, and a header is long.
    context: str = field(default="", repr=False)

    @property
    def id(self) -> str:
        """Stable chunk id: document id and position, e.g. `handbook/leave.md#2`."""
        return f"{self.doc_id}#{self.index}"

    @property
    def indexed_text(self) -> str:
        """What both retrievers read (the embedder and BM25): the context header, if any,
        then the chunk's own text.

        >>> Chunk("a.md", 1, "It needs approval.", 9, 27, context="Leave policy").indexed_text
        'Leave policy\\n\\nIt needs approval.'
        """
        return f"{self.context}\n\n{self.text}" if self.context else self.text


@dataclass(frozen=True, slots=True)
class DocRecord:
    """What a store remembers about a document, to tell later whether it changed."""

    id: str
    version: str
    hash: str
    tenant: str
    groups: tuple[str, ...]
    title: str = ""

    @classmethod
    def of(cls, doc: Document) -> DocRecord:
        """The record of a loaded document."""
        return cls(doc.id, doc.version, doc.hash, doc.tenant, tuple(doc.groups), doc.title)


@dataclass(frozen=True, slots=True)
class Hit:
    """A retrieved chunk and the score that ranked it (higher is better)."""

    chunk: Chunk
    score: float


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is asking: the access rule compares this with each chunk's metadata."""

    user: str
    tenant: str = DEFAULT_TENANT
    groups: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        # Accept any iterable of group names, store an immutable set.
        object.__setattr__(self, "groups", frozenset(self.groups))


@dataclass(frozen=True, slots=True, order=True)
class Partition:
    """An access partition: the items of one tenant with one set of groups.

    Every item of a partition has the same readers, since the access rule reads only the
    tenant and the groups. The SQLite index keeps BM25 per partition; a learned embedder
    is fitted per partition (`raglab.store.indexing`).

    >>> Partition("acme", ("hr", "board", "hr"))
    Partition(tenant='acme', groups=('board', 'hr'))
    """

    tenant: str
    groups: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Sorted, without repeats: the same set of groups is the same partition.
        object.__setattr__(self, "groups", tuple(sorted(set(self.groups))))

    @classmethod
    def of(cls, item: Chunk | Document | DocRecord) -> Partition:
        """The partition `item` (a chunk, a document or a store's record of one) belongs to."""
        return cls(item.tenant, item.groups)

    @property
    def groups_json(self) -> str:
        """The groups as an index stores them (the SQLite `parts` table, an index's meta)."""
        return json.dumps(list(self.groups))


@dataclass(frozen=True, slots=True)
class Citation:
    """A `[n]` marker in an answer and the retrieved hit it points to."""

    n: int
    hit: Hit


CONFIDENCE_LEVELS = ("sure", "cautious", "abstained")
"""How sure an answerer is: it answers, answers with a stated caution, or declines."""


@dataclass(frozen=True, slots=True)
class Confidence:
    """How sure the answerer is that its answer is right.

    `probability`: its calibrated estimate (`raglab.generate.abstention`); `level`: what it
    did with it, one of CONFIDENCE_LEVELS. A "cautious" answer quotes the sources but says
    they may not answer the question: the evidence was weak.
    """

    level: str
    probability: float

    def __post_init__(self) -> None:
        if self.level not in CONFIDENCE_LEVELS:
            raise ValueError(
                f"level must be one of {', '.join(CONFIDENCE_LEVELS)} (got {self.level!r})"
            )


@dataclass(frozen=True, slots=True)
class Answer:
    """What the query path returns: the text, its verified citations, and what was retrieved.

    `abstained` is True when the engine declined to answer (weak or no evidence).
    `retrieved` lists every hit that reached the prompt, in prompt order: source `[n]`
    is `retrieved[n - 1]`. `invalid_citations` lists any `[n]` in the text that does not
    point at a retrieved source: such an answer is flagged, never passed off as valid.
    `confidence`: how sure the answerer is (None from a generator that does not say, such
    as a language model).
    """

    text: str
    citations: tuple[Citation, ...] = ()
    retrieved: tuple[Hit, ...] = ()
    abstained: bool = False
    invalid_citations: tuple[int, ...] = ()
    confidence: Confidence | None = None

    @property
    def verified(self) -> bool:
        """True when the text's claims rest on retrieved sources: it cites at least one,
        and every `[n]` marker points at a retrieved source. An abstention claims nothing,
        so it is verified too; an uncited or empty text is not."""
        return not self.invalid_citations and (self.abstained or bool(self.citations))
