"""Follow-up retrieval with and without the standalone rewrite, history crowding, leaks.

Plays every conversation of data/conversations.jsonl through `raglab chat`'s session over
the sample corpus (hybrid search, the offline answerer; hashing embedder unless
`--embedder` says otherwise), three ways
(`raglab.evaluation.follow_ups.MODES`), and writes benchmarks/results/conversation.json
(conversation-<embedder>.json for another embedder):
per split ("dev": the conversations seen while the rewrite rules were written;
"heldout": written after, never used to change them) and mode, follow-up recall@5 and
answered-with-citation; the rewrite's decisions; document chunks displaced by history
(separate allocations vs one shared top-k); history leaks across users.

    .venv/bin/python benchmarks/bench_conversation.py [--embedder hashing]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from raglab.conversation.conversations import load_conversations
from raglab.conversation.sqlite_history import SQLiteHistory
from raglab.evaluation.follow_ups import MODES, FollowUp, history_leaks, play
from raglab.pipeline import Index
from raglab.samples import sample_conversations, sample_corpus

RESULTS = Path(__file__).parent / "results"
"""conversation.json for the default (hashing) embedder, conversation-<name>.json for another."""


def mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0


def summary(results: list[FollowUp]) -> dict[str, object]:
    return {
        "follow_ups": len(results),
        "recall@5": mean([r.recall for r in results]),
        "mrr": mean([r.reciprocal_rank for r in results]),
        "answered_with_citation": mean([float(r.cited_relevant) for r in results]),
        "grounded": mean([float(r.grounded) for r in results]),
    }


def decisions(results: list[FollowUp]) -> dict[str, int]:
    """How the offline rules decided: rewrote what must be rewritten, kept what must be kept."""
    changed = [r for r in results if r.standalone != r.question]
    return {
        "must_rewrite": sum(r.must_rewrite for r in results),
        "rewritten_when_needed": sum(r.must_rewrite for r in changed),
        "must_keep": sum(not r.must_rewrite for r in results),
        "kept_when_needed": sum(not r.must_rewrite for r in results if r not in changed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="hashing")
    args = parser.parse_args()
    index = Index.from_folder(sample_corpus(), embedder=args.embedder)
    conversations = load_conversations(sample_conversations(), doc_ids=index.document_ids())
    played = {mode: [r for c in conversations for r in play(index, c, mode)] for mode in MODES}
    report: dict[str, object] = {"embedder": args.embedder, "conversations": len(conversations)}
    for split in ("dev", "heldout", "all"):
        chosen = {
            mode: [r for r in rs if split == "all" or r.split == split]
            for mode, rs in played.items()
        }
        report[split] = {
            "conversations": sum(1 for c in conversations if split == "all" or c.split == split),
            **{mode: summary(rs) for mode, rs in chosen.items()},
            "must_rewrite_only": {
                mode: summary([r for r in rs if r.must_rewrite]) for mode, rs in chosen.items()
            },
            "must_keep_only": {
                mode: summary([r for r in rs if not r.must_rewrite]) for mode, rs in chosen.items()
            },
            "offline_rewrite_decisions": decisions(chosen["offline"]),
        }
    gold = played["gold"]
    report["displaced_by_history"] = {
        "separate_allocations": sum(r.displaced for r in gold),
        "one_shared_top_k": sum(r.displaced_shared for r in gold),
        "follow_ups_crowded_in_shared_top_k": sum(r.displaced_shared > 0 for r in gold),
    }
    with tempfile.TemporaryDirectory() as folder:  # the real store: the index file's table
        path = Path(folder) / "index.sqlite"
        on_disk = Index.from_folder(sample_corpus(), embedder=args.embedder, path=path)
        with SQLiteHistory.open(path) as history:
            for c in conversations:
                play(on_disk, c, "offline", history=history)
            report["history_leaks"] = history_leaks(history, conversations, on_disk)
        on_disk.store.close()  # type: ignore[attr-defined]
    report["by_kind_offline"] = {
        kind: summary([r for r in played["offline"] if r.kind == kind])
        for kind in sorted({r.kind for r in played["offline"]})
    }
    report["misses_offline"] = [
        {"conversation": r.conversation, "turn": r.turn, "kind": r.kind, "searched": r.standalone}
        for r in played["offline"]
        if r.recall < 1.0
    ]
    name = "conversation" + ("" if args.embedder == "hashing" else f"-{args.embedder}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "misses_offline"}, indent=2))


if __name__ == "__main__":
    main()
