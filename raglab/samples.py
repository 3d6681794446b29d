"""The sample knowledge base and its labelled questions, wherever raglab runs from.

Notebooks find the data through these functions, never through a path relative to their
own folder: nbgrader and instructors run notebooks from other folders. In a source
checkout the data is the repository's `data/` folder; an installed wheel carries a copy
inside the package (`raglab/sample_data/`).

>>> sample_corpus().name, sample_questions().name
('corpus', 'questions.jsonl')

A second knowledge base in another domain, `data/transfer/`, is for judging what was fitted
on the first on documents it never saw (`transfer_corpus()`, `transfer_questions()`).
"""

from __future__ import annotations

from pathlib import Path

_PACKAGED = Path(__file__).resolve().parent / "sample_data"
_CHECKOUT = Path(__file__).resolve().parent.parent / "data"


def sample_data() -> Path:
    """The folder holding `corpus/` and `questions.jsonl`."""
    for folder in (_PACKAGED, _CHECKOUT):
        if (folder / "corpus").is_dir():
            return folder
    raise FileNotFoundError(
        f"raglab's sample data is missing: looked in {_PACKAGED} and {_CHECKOUT}; "
        "reinstall raglab or run from a checkout of the repository"
    )


def sample_corpus() -> Path:
    """The sample corpus: a folder of `.md`/`.txt` documents for two tenants."""
    return sample_data() / "corpus"


def sample_questions() -> Path:
    """The labelled question set for the sample corpus (JSONL)."""
    return sample_data() / "questions.jsonl"


def sample_global_questions() -> Path:
    """Corpus-wide questions for the sample corpus (JSONL, kind "global"): each key point
    in `must_contain` is scored apart (notebook 13, `benchmarks/bench_graph.py`)."""
    return sample_data() / "questions_global.jsonl"


def multihop_questions() -> Path:
    """The multi-hop questions for the sample corpus (JSONL, with `hops`): `raglab.agent`'s."""
    return sample_data() / "questions_multihop.jsonl"


def sample_conversations() -> Path:
    """Labelled conversations over the sample corpus (JSONL): each follow-up with its
    standalone form and relevant documents (`raglab.conversation.conversations`)."""
    return sample_data() / "conversations.jsonl"


def transfer_corpus() -> Path:
    """The second corpus (a library network, a veterinary group, a carrier): never fitted on."""
    return sample_data() / "transfer" / "corpus"


def transfer_questions() -> Path:
    """The labelled question set for the second corpus (JSONL)."""
    return sample_data() / "transfer" / "questions.jsonl"
