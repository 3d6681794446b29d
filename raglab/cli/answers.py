"""How `raglab ask` prints an answer: as text for a person, or as one JSON object.

The JSON object's fields are a contract other programs rely on: `answer`, `abstained`,
`citations` and `retrieved` (each `{"n", "doc_id", "start", "end", "score"}`, where `n` is
the answer's [n] marker), `verified` and `invalid_citations`; and `confidence`
(`{"level", "probability"}`, or null from a generator that does not say how sure it is).
`ask --agent --json` adds `trace` (each step: its tool, query or document, why, and what it
retrieved) and `stop_reason`, and its `retrieved` is everything any step retrieved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raglab.text import shown

if TYPE_CHECKING:
    from raglab.agent.trace import AgentRun
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


def agent_as_dict(run: AgentRun) -> dict[str, Any]:
    """`answer_as_dict` of the agent's answer, with its trace; `retrieved`: every chunk any
    step retrieved, numbered as the answer's sources are (the prompt holds them all, in
    the order first found)."""
    result = answer_as_dict(run.answer)
    result["retrieved"] = [hit_as_dict(n, hit) for n, hit in enumerate(run.retrieved, start=1)]
    result["trace"] = [
        {
            "step": step.n,
            "tool": step.action.tool,
            "query": step.action.query,
            "doc_id": step.action.doc_id,
            "why": step.action.why,
            "retrieved": [hit_as_dict(n, hit) for n, hit in enumerate(step.hits, start=1)],
            "new": step.new,
            "tokens": step.tokens,
        }
        for step in run.steps
    ]
    result["stop_reason"] = run.stop_reason
    if run.transcript:
        result["transcript"] = list(run.transcript)
    return result


def format_agent(run: AgentRun) -> str:
    """The answer as `format_answer` prints it, after the trace (steps, then why it stopped)."""
    trace = "\n".join(shown(line) for line in run.describe().splitlines())
    return f"{trace}\n\n{format_answer(run.answer)}"
