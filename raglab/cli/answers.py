"""How `raglab ask` prints an answer: as text for a person, or as one JSON object.

The JSON object's fields are a contract other programs rely on: `answer`, `abstained`,
`citations` and `retrieved` (each `{"n", "doc_id", "start", "end", "score"}`, where `n` is
the answer's [n] marker), `verified` and `invalid_citations`; and `confidence`
(`{"level", "probability"}`, or null from a generator that does not say how sure it is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raglab.text import shown

if TYPE_CHECKING:
    from raglab.records import Answer, Hit


def hit_as_dict(n: int, hit: Hit) -> dict[str, Any]:
    chunk = hit.chunk
    return {
        "n": n,
        "doc_id": chunk.doc_id,
        "start": chunk.start,
        "end": chunk.end,
        "score": round(hit.score, 6),
    }


def answer_as_dict(answer: Answer) -> dict[str, Any]:
    return {
        "answer": answer.text,
        "abstained": answer.abstained,
        "verified": answer.verified,
        "citations": [hit_as_dict(c.n, c.hit) for c in answer.citations],
        "invalid_citations": list(answer.invalid_citations),
        "confidence": confidence_as_dict(answer),
        "retrieved": [hit_as_dict(n, hit) for n, hit in enumerate(answer.retrieved, start=1)],
    }


def confidence_as_dict(answer: Answer) -> dict[str, Any] | None:
    if answer.confidence is None:
        return None
    return {
        "level": answer.confidence.level,
        "probability": round(answer.confidence.probability, 3),
    }


def format_answer(answer: Answer) -> str:
    lines = [answer.text, ""]
    if answer.confidence is not None and not answer.abstained:
        c = answer.confidence
        lines.append(f"Confidence: {c.level} ({c.probability:.0%} likely to answer the question)")
    if answer.citations:
        lines.append("Sources:")
        for citation in answer.citations:
            chunk = citation.hit.chunk
            # A file's name and headings are the corpus's text, not ours: escaped for the terminal.
            where = f" — {shown(chunk.heading)}" if chunk.heading else ""
            lines.append(
                f"  [{citation.n}] {shown(chunk.doc_id)}{where} (chars {chunk.start}-{chunk.end})"
            )
    elif not answer.abstained:
        lines.append("(no sources cited)")
    if answer.invalid_citations:
        markers = ", ".join(f"[{n}]" for n in answer.invalid_citations)
        lines.append(f"WARNING: citations {markers} do not refer to any retrieved source")
    return "\n".join(lines).rstrip()
