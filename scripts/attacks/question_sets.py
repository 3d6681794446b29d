"""A question set that names a document wrongly, or one the loader refused: said at once, and
the run goes on where it can."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from attacks.common import CORPUS, run, traceback_in


def misnamed_then_refused(tmp: Path) -> str:
    corpus = tmp / "corpus"
    shutil.copytree(CORPUS, corpus)
    questions = tmp / "q.jsonl"
    line = {"id": "q1", "question": "Leave?", "tenant": "acme", "answerable": True}
    questions.write_text(json.dumps({**line, "relevant_docs": ["acme/policies/leav.md"]}) + "\n")
    started = time.monotonic()
    typo = run("eval", "--docs", str(corpus), "--questions", str(questions), "--embedder", "minilm")
    took = time.monotonic() - started
    if typo.returncode == 0 or traceback_in(typo) or "did you mean" not in typo.stderr:
        return f"FAILED: a misnamed document: {typo.stderr.strip()[-100:]}"
    (corpus / "acme" / "note.md").write_text('Deploy with password = "Xk9#mQ2vL7pZ"\n')
    questions.write_text(json.dumps({**line, "relevant_docs": ["acme/note.md"]}) + "\n")
    refused = run("eval", "--docs", str(corpus), "--questions", str(questions), "--retrieval-only")
    if refused.returncode != 0 or "refused at load" not in refused.stderr:
        return f"FAILED: a refused relevant document: {refused.stderr.strip()[-100:]}"
    return "held" if took < 10 else f"FAILED: the misnamed document was found after {took:.0f} s"


ATTACKS = [
    ("16a relevant_docs misnamed (before indexing) or refused at load", misnamed_then_refused)
]
