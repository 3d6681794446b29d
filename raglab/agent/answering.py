"""The agent's answer: the ordinary answerer, once per part, over everything gathered.

The offline answerer quotes at most three sentences for a question, chosen against its
words; a two-part question ("how long is probation, and how much is the allowance?") or a
chain ("the warranty of the part the guide says to install") needs a sentence for each
part. So each part is answered on its own by `raglab.pipeline.answer_from`, with the same
sources in the same order (so `[n]` means the same chunk in every part's answer), a
chain's part carrying the names its clause found; the answers are joined, repeated
sentences dropped, and the citations verified again against those sources. When a part
the asker asked for gets no answer (a chain's clause is only the way to it), the whole
question is answered as `raglab.ask` would (half an answer
passed off as a whole would be worse than the answerer's own decision), and a question
of one part is answered exactly as `raglab.ask` answers it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from raglab.agent.planner import Part, Plan, bridge, decompose
from raglab.generate.citations import verify_citations
from raglab.generate.extractive import without_caution
from raglab.generate.generation import Generator
from raglab.generate.prompting import ABSTENTION
from raglab.ingest.stems import content_stems
from raglab.pipeline import answer_from
from raglab.records import Answer, Hit

_CITED_SENTENCE_END = re.compile(r"(?<=\][.!?])\s+")


def answer_parts(
    question: str, hits: Sequence[Hit], generator: Generator, *, max_chars: int = 6000
) -> Answer:
    """One `Answer` for `question` from `hits`: each part answered, the answers joined."""
    plan = decompose(question)
    if len(plan.parts) == 1:
        return answer_from(question, hits, generator, max_chars=max_chars)
    asked = [part_question(plan, i, hits, question) for i in range(len(plan.parts))]
    answers = [answer_from(q, hits, generator, max_chars=max_chars) for q in asked]
    clauses = {part.depends_on for part in plan.parts}
    asked_for = [a for i, a in enumerate(answers) if i not in clauses]
    unresolved = any(
        part.depends_on is not None and not bridge(plan.parts[part.depends_on], hits, question)
        for part in plan.parts
    )  # the thing a part asks about was never found: its answer would be about anything
    if unresolved or any(answer.abstained for answer in asked_for):
        return answer_from(question, hits, generator, max_chars=max_chars)
    return merged(answers)


def part_question(plan: Plan, i: int, hits: Sequence[Hit], question: str) -> str:
    """What part `i` is answered as: its text; with the names its clause found; after the
    part before it when it says too little alone ("how much is it")."""
    part: Part = plan.parts[i]
    text = part.text
    if part.depends_on is not None:
        names = bridge(plan.parts[part.depends_on], hits, question)
        text = f"{text} ({', '.join(names)})" if names else text
    if i > 0 and len(content_stems(part.text)) < 2:
        text = f"{plan.parts[i - 1].text}: {text}"
    return text


def merged(answers: Sequence[Answer]) -> Answer:
    """The parts' answers as one: their sentences in order, each once, cited as before."""
    sources = answers[0].retrieved
    if any(a.retrieved != sources for a in answers):
        raise ValueError("the parts' answers were built from different sources")
    answered = [a for a in answers if not a.abstained]
    if not answered:
        return answers[0]
    sentences: list[str] = []
    for answer in answered:
        for sentence in _CITED_SENTENCE_END.split(without_caution(answer.text).strip()):
            if sentence and sentence not in sentences:
                sentences.append(sentence)
    weakest = min(
        (a for a in answered if a.confidence is not None),
        key=lambda a: a.confidence.probability if a.confidence else 1.0,
        default=answered[0],
    )
    text = " ".join(sentences)
    if weakest.text != without_caution(weakest.text):  # it opened with a caution: keep it
        text = f"{weakest.text.splitlines()[0]}\n{text}"
    report = verify_citations(text, sources)
    return Answer(
        text=text or ABSTENTION,
        citations=report.citations,
        retrieved=sources,
        abstained=False,
        invalid_citations=report.invalid,
        confidence=weakest.confidence,
    )
