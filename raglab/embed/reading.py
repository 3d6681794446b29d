"""How much of a text an embedder reads, and the embedder as semantic chunking uses it.

MiniLM reads at most 256 word pieces, [CLS] and [SEP] included, and ignores the rest of a
longer text; the hashing embedder reads everything. A semantic chunk is kept within what
the index's embedder reads (`raglab.ingest.semantic`), so no part of it goes unseen.
"""

from __future__ import annotations

from raglab.embed.embedders import Embedder, is_fittable
from raglab.ingest.semantic import SentenceEmbedding

__all__ = ["sentence_embedding"]

FRAME_TOKENS = 2
"""[CLS] and [SEP]: the two tokens MiniLM adds around every text, counted in its limit."""


def sentence_embedding(embedder: Embedder) -> SentenceEmbedding:
    """`embedder` as semantic chunking takes it: its `embed`, and its token limit if any.

    A learned embedder (LSA) is refused: it is fitted on the chunks, which semantic
    chunking would need it to cut.
    """
    if is_fittable(embedder):
        raise ValueError(
            f"semantic chunking needs an embedder that does not learn from the chunks "
            f"(got {embedder.name!r}): use hashing or minilm, or another chunker"
        )
    if embedder.name != "minilm":
        return SentenceEmbedding(embedder.embed)
    from raglab.embed.minilm import DEFAULT_MAX_TOKENS
    from raglab.embed.tokens import wordpiece_counter

    # A wrapper (the embedding cache) hides the setting: MiniLM's default is then its limit.
    limit = getattr(embedder, "max_tokens", DEFAULT_MAX_TOKENS)
    return SentenceEmbedding(embedder.embed, wordpiece_counter(), limit - FRAME_TOKENS)
