"""Long context: what is pasted is what the model can see, so the long prompt must hold
nothing its reader may not read, whoever asks and however the corpus is arranged."""

from __future__ import annotations

import itertools
from pathlib import Path

from attacks.common import CORPUS, corpus_with
from raglab.ingest.loaders import load_folder
from raglab.longcontext.whole_corpus import ask_long_context, long_context_sources
from raglab.records import Principal
from raglab.store.access import can_read

SECRET = "quillfeather"
SECRET_DOCUMENTS = {
    "acme/board/minutes.md": (
        "---\ntenant: acme\ngroups: [board]\n---\n# Board minutes\n\n"
        f"The {SECRET} merger closes in May. Vacation days rise to 30 after the {SECRET} merger.\n"
    ),
    # a restricted new version of a public document: outsiders keep the old one, never the new
    "acme/pay-2026.md": (
        "---\ntenant: acme\ngroups: [hr]\nsupersedes: [acme/pay-2025.md]\n---\n# Pay 2026\n\n"
        f"The {SECRET} pay rise is 9 percent.\n"
    ),
    "acme/pay-2025.md": "---\ntenant: acme\n---\n# Pay 2025\n\nThe pay rise is 3 percent.\n",
    "globex/secret.md": f"---\ntenant: globex\n---\n# Globex\n\nThe {SECRET} code is 4417.\n",
}
QUESTIONS = (
    f"When does the {SECRET} merger close?",
    "How many vacation days do I get?",
    f"What is the {SECRET} pay rise?",
    f"What is the {SECRET} code?",
)


def _principals(documents) -> list[Principal]:
    """Every tenant (and one that holds nothing) × every set of up to two groups in the
    corpus, with look-alike group names (case, spaces) that must match nothing."""
    tenants = sorted({d.tenant for d in documents}) + ["nobody"]
    groups = sorted({g for d in documents for g in d.groups}) + ["BOARD", " board", "board "]
    sets = [()] + [(g,) for g in groups] + list(itertools.combinations(groups[:6], 2))
    return [Principal("attacker", t, s) for t in tenants for s in sets]


def every_reader_gets_only_their_documents(tmp: Path) -> str:
    """The long prompt of every principal holds only documents they may read, and no answer
    from it quotes a word only forbidden documents hold."""
    folder = corpus_with(tmp, SECRET_DOCUMENTS)
    for path in CORPUS.rglob("*"):
        if path.is_file():
            target = folder / path.relative_to(CORPUS)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    documents = load_folder(folder).documents
    problems = []
    for principal in _principals(documents):
        sources = long_context_sources(documents, principal)
        shown = [h.chunk.doc_id for h in sources if not can_read(principal, h.chunk)]
        if shown:
            problems.append(f"{principal.tenant}/{sorted(principal.groups)} shown {shown[:3]}")
        may_see_secret = any(SECRET in h.chunk.text for h in sources)
        for question in QUESTIONS:
            answer = ask_long_context(question, documents, principal)
            if SECRET in answer.text and not may_see_secret:
                problems.append(f"{principal.tenant}/{sorted(principal.groups)} told {SECRET!r}")
    outsider = {h.chunk.doc_id for h in long_context_sources(documents, Principal("u", "acme"))}
    if "acme/pay-2025.md" not in outsider:
        problems.append("an hr-only new version hid the public old one from a user outside hr")
    return f"FAILED: {'; '.join(problems[:3])}" if problems else "held"


ATTACKS = [
    (
        "22l long context: every tenant × groups (look-alike names too) reads only its own",
        every_reader_gets_only_their_documents,
    ),
]
