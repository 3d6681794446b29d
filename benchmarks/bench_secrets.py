"""False positives of the credential screen on public corpora: ordinary documents refused.

    python benchmarks/bench_secrets.py DATASET [DATASET ...] [--show 20]

Each DATASET is a folder in BEIR's layout (only `corpus.jsonl` is read: one
`{"_id", "title", "text"}` a line). Every entry becomes one document, `# title` then the
text, as `bench_beir.py` writes it, and the folder is loaded by `raglab.ingest.loaders` twice:

- refuse (the default): documents refused for holding what looks like a credential,
  counted by the kind of rule that fired (a document can count under several);
- redact (`--secrets redact`): documents loaded with a span blanked out, and documents
  still refused (redaction could not cut the secret out).

A public corpus of essays or abstracts holds no credential, so every count is a false
positive. Measured (refused in refuse mode; redacted / refused in redact mode):

    corpus                                  before (compound terms read as keys)   after
    SciFact, 5,183 abstracts                5 high-entropy; 5 / 0                  0; 0 / 0
    ArguAna, the 1,406 test arguments       2 high-entropy; 2 / 0                  0; 0 / 0

`--show N` prints the first N flagged spans (escaped, shortened) to see why.
The datasets never enter the repository (public benchmarks carry their own licences):
only the figures do. The true positives are tested in tests/ingest/test_credentials.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

from bench_beir import file_name

from raglab.ingest.credentials import find_secrets, visible
from raglab.ingest.loaders import load_folder

CONTEXT = 30
"""Characters shown on each side of a flagged span with --show."""


def documents(dataset: Path) -> dict[str, str]:
    """File name -> document text, for every entry of the dataset's corpus.jsonl."""
    path = dataset / "corpus.jsonl"
    if not path.is_file():
        sys.exit(f"bench_secrets: {path} not found: a BEIR dataset folder holds it")
    docs = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            title = " ".join(str(row.get("title") or "").split())
            text = f"# {title}\n\n{row['text']}\n" if title else f"{row['text']}\n"
            docs[file_name(str(row["_id"]))] = text
    return docs


def measure(docs: dict[str, str], folder: Path) -> dict[str, object]:
    """The screen's verdicts on `docs`, written as files into `folder`."""
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    limit = len(docs) + 1
    refused = {
        e.path for e in load_folder(folder, max_files=limit).errors if "credential" in e.reason
    }
    redact = load_folder(folder, max_files=limit, secrets="redact")
    still = {e.path for e in redact.errors if "credential" in e.reason}
    blanked = {w.path for w in redact.warnings if w.reason.startswith("redacted")}
    kinds = Counter(kind for name in refused for kind in {s.kind for s in find_secrets(docs[name])})
    return {
        "documents": len(docs),
        "refused": len(refused),
        "by rule": dict(sorted(kinds.items())),
        "redacted": len(blanked),
        "refused with redact": len(still),
        "flagged": sorted(refused),
    }


def shown_spans(docs: dict[str, str], names: list[str], limit: int) -> list[str]:
    """One line per flagged span: document, rule, the span in its context (escaped)."""
    lines = []
    for name in names:
        text = docs[name]
        seen = visible(text)
        for secret in find_secrets(text):
            around = seen[max(0, secret.start - CONTEXT) : secret.end + CONTEXT]
            lines.append(f"  {name}: {secret.kind}: {around!r}")
            if len(lines) == limit:
                return lines
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+", type=Path, help="BEIR-layout folders")
    parser.add_argument("--show", type=int, default=0, help="print the first N flagged spans")
    args = parser.parse_args(argv)
    for dataset in args.datasets:
        docs = documents(dataset)
        with tempfile.TemporaryDirectory() as folder:
            result = measure(docs, Path(folder))
        flagged = result.pop("flagged")
        print(f"{dataset.name}: " + ", ".join(f"{k} {v}" for k, v in result.items()))
        for line in shown_spans(docs, flagged, args.show):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
