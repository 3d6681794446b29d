"""SQuAD 2.0 as a raglab folder: one document per article, and its questions with key facts.

    python benchmarks/squad_to_raglab.py DEV_JSON OUT [--per-article 30]

SQuAD 2.0 (Rajpurkar, Jia & Liang, 2018; CC BY-SA 4.0) asks questions of Wikipedia
paragraphs, and half of its dev questions cannot be answered from their paragraph although
they were written to look as if they could: the standard test of abstention. It never
enters the repository (its licence is not the project's): only the figures do.

OUT receives what benchmarks/bench_answerer.py reads (`--corpus squad2=OUT`):

- `corpus/`: one markdown file per article, `# Title` and then its paragraphs, one tenant
  ("wiki"), no groups. An article is closer to a knowledge base's page than a paragraph
  is, and it makes the answerer find the right paragraph in a long page;
- `questions.jsonl`: every answerable question is relevant to its article, with
  `must_contain` the shortest of its gold answers (annotators mark overlapping spans,
  "Denver Broncos" and "Broncos": the shortest is almost always inside the others, so an
  answer stating any of them usually holds it); kind "squad". Every unanswerable one is
  kind "near_miss": its article talks about the topic and does not state the fact.

`--per-article N` keeps N questions of each article (default 30; 0 keeps all), chosen by a
hash of the question's id, so every run picks the same ones and both kinds stay in their
proportion.

Reproduce (the files used for benchmarks/results/answerer.json): SQuAD 2.0's dev set as
shipped in the public repository chrischute/squad (its file dev-v2.0.json in the data
folder: the first 16 of the official dev set's 35 articles, 6,078 questions, sha256
e67e5969b6dc6c16…), copied to /work/data-public/squad2/dev-v2.0.json, then

    python benchmarks/squad_to_raglab.py /work/data-public/squad2/dev-v2.0.json /work/data-public/squad2
    python benchmarks/bench_answerer.py --corpus squad2=/work/data-public/squad2
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raglab.text import content_hash

TENANT = "wiki"


def file_name(title: str) -> str:
    """An article title as a document file name the loader accepts.

    >>> file_name("Yuan_dynasty"), file_name("1973 oil crisis")
    ('Yuan_dynasty.md', '1973_oil_crisis.md')
    """
    return re.sub(r"[^A-Za-z0-9._-]", "_", title) + ".md"


def document(article: dict[str, Any]) -> str:
    """The article as a markdown document: front matter, its title, each paragraph."""
    title = article["title"].replace("_", " ")
    paragraphs = [" ".join(p["context"].split()) for p in article["paragraphs"]]
    front = f"---\ntitle: {title}\ntenant: {TENANT}\ngroups: []\nversion: 1\n---\n"
    return front + f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n"


def question(qa: dict[str, Any], doc_id: str) -> dict[str, Any]:
    """One SQuAD question as a raglab question-set line."""
    row: dict[str, Any] = {"id": qa["id"], "question": " ".join(qa["question"].split())}
    row["tenant"] = TENANT
    answers = sorted(
        {" ".join(a["text"].split()) for a in qa["answers"]}, key=lambda t: (len(t), t)
    )
    if qa.get("is_impossible") or not answers:
        return row | {"relevant_docs": [], "answerable": False, "kind": "near_miss"}
    return row | {
        "relevant_docs": [doc_id],
        "answerable": True,
        "answer": answers[-1],
        "must_contain": answers[:1],
        "kind": "squad",
    }


def sample(qas: list[dict[str, Any]], per_article: int) -> list[dict[str, Any]]:
    """`per_article` questions (all when 0), the same ones on every run."""
    if per_article == 0:
        return qas
    return sorted(qas, key=lambda qa: content_hash(f"squad:{qa['id']}"))[:per_article]


def convert(data: dict[str, Any], out: Path, per_article: int) -> tuple[int, int]:
    """Write `out/corpus/` and `out/questions.jsonl`; (documents, questions) written."""
    corpus = out / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    lines = []
    for article in data["data"]:
        doc_id = file_name(article["title"])
        (corpus / doc_id).write_text(document(article), encoding="utf-8")
        qas = [qa for p in article["paragraphs"] for qa in p["qas"]]
        lines += [json.dumps(question(qa, doc_id)) for qa in sample(qas, per_article)]
    (out / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(data["data"]), len(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dev_json", type=Path, help="SQuAD 2.0's dev-v2.0.json")
    parser.add_argument("out", type=Path, help="the raglab folder to write")
    parser.add_argument("--per-article", type=int, default=30, help="questions per article")
    args = parser.parse_args(argv)
    try:
        data = json.loads(args.dev_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        sys.exit(f"squad_to_raglab: {args.dev_json}: {error}")
    if not str(data.get("version", "")).startswith("v2"):
        sys.exit(
            f"squad_to_raglab: {args.dev_json} is not SQuAD 2.0 (version {data.get('version')!r})"
        )
    documents, questions = convert(data, args.out, args.per_article)
    print(f"{documents} documents, {questions} questions written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
