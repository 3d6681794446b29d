"""The `raglab` command's options: one parser, a sub-parser per command, shared option groups.

Choices come from the engine's own registries (embedders, retrieval methods, chunkers,
stores), so `--help` cannot go stale. What the commands do with the options is in
`raglab.cli.commands`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from raglab.cli.chat import run_chat
from raglab.cli.commands import run_ask, run_eval, run_index

EXAMPLES = """\
examples:
  raglab ask "How many vacation days do I get?" --docs data/corpus --tenant acme
  raglab index data/corpus --index corpus.sqlite
  raglab index data/corpus --index neural.sqlite --profile offline-neural
  raglab ask "What does error E-204 mean?" --index corpus.sqlite --tenant globex --json
  raglab eval --docs data/corpus --questions data/questions.jsonl --retriever bm25 --json
  printf 'Which thermostats do you sell?\\nHow much is the second one?\\n' |
    raglab chat --index corpus.sqlite --tenant globex --user ann
  raglab progress exercises
  raglab grade class/ --summary
"""

WORKBOOK_COMMANDS = {
    "exercises": "build the student notebooks (exercises/), or check them",
    "grade": "grade learners' notebooks, out of the course's points",
    "progress": "the exercises you have passed so far",
}
"""The workbook's commands, listed in `--help` with the engine's. Each parses its own
arguments (`raglab grade --help`): `raglab.cli.run_command` hands it over before this
parser runs."""


def build_parser() -> argparse.ArgumentParser:
    from raglab.embed.embedders import available_embedders
    from raglab.generate.prompting import ORDERS
    from raglab.query import METHODS

    parser = argparse.ArgumentParser(
        prog="raglab",
        description="A small, offline RAG engine: index a folder of documents, ask questions "
        "with cited answers, and evaluate retrieval.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def corpus_options(
        sub: argparse.ArgumentParser, k_help: str = "how many chunks to retrieve"
    ) -> None:
        source = sub.add_mutually_exclusive_group(required=True)
        source.add_argument(
            "--docs", metavar="DIR", type=Path, help="a folder of .md/.txt files, indexed in memory"
        )
        source.add_argument(
            "--index", metavar="FILE", type=Path, help="an index file made by `raglab index`"
        )
        store_options(sub)
        sub.add_argument(
            "--qdrant-keyword",
            choices=(
                "exact",
                "server",
            ),  # raglab.store.qdrant_search.KEYWORD_MODES (qdrant is optional)
            default=None,
            help="a Qdrant index's keyword ranking: exact (BM25 fitted here, the default) or "
            "server (sparse vectors ranked in Qdrant: faster cold, scores not identical)",
        )
        sub.add_argument(
            "--k",
            type=positive_int,
            default=None,
            help=f"{k_help} (default: the profile's, else 5)",
        )
        sub.add_argument(
            "--retriever",
            choices=METHODS,
            default=None,
            help="ranking method (default: the profile's, else hybrid: dense and BM25 fused by "
            "the embedder's default fusion, which for hashing and lsa is BM25's own order)",
        )
        sub.add_argument(
            "--embedder",
            choices=available_embedders(),
            default=None,
            help="embedder for --docs (default: the profile's, else hashing; an index remembers its own)",
        )
        chunker_options(sub)
        limit_options(sub)
        selection_options(sub)
        profile_options(sub)
        long_work_options(sub)
        sub.add_argument("--json", action="store_true", help="print one JSON object")

    ask = commands.add_parser(
        "ask",
        help="answer a question with cited sources",
        description="Answer a question from the documents the asker may read.",
    )
    ask.add_argument("question")
    corpus_options(ask)
    ask.add_argument("--tenant", default="default", help="the asker's tenant (default 'default')")
    ask.add_argument(
        "--groups", type=comma_list, default=(), help="the asker's groups, comma-separated"
    )
    ask.add_argument("--user", default="cli", help="the asker's user name (for the record)")
    ask.add_argument(
        "--llm-url",
        metavar="URL",
        help="an OpenAI-compatible server, e.g. http://localhost:11434/v1 "
        "(default: the offline extractive generator); key from RAGLAB_API_KEY",
    )
    ask.add_argument("--llm-model", metavar="NAME", help="the model name for --llm-url")
    ask.add_argument(
        "--max-tokens",
        metavar="N",
        type=positive_int,
        default=None,
        help="a budget of source text in tokens (MiniLM's WordPiece count): the best "
        "chunks that fit, kept whole (overrides the profile's context budget)",
    )
    ask.add_argument(
        "--order",
        choices=ORDERS,
        default="rank",
        help="sources best first (rank), or best first and last (ends: 'lost in the middle')",
    )
    ask.add_argument(
        "--llm-timeout",
        metavar="SECONDS",
        type=float,
        default=60.0,
        help="the whole request's deadline, connecting to last byte (default 60)",
    )
    ask.add_argument(
        "--graph",
        choices=("global", "local"),
        default=None,
        help="answer through the entity graph: global (community summaries, for corpus-wide "
        "questions) or local (around the entities the question names); --max-tokens is its budget",
    )
    ask.add_argument(
        "--agent",
        action="store_true",
        help="search again until every part of the question has evidence (raglab.agent); "
        "--json adds the trace",
    )
    ask.set_defaults(run=run_ask)

    index = commands.add_parser(
        "index",
        help="build or update an index file from a folder",
        description="Index a folder incrementally: changed documents are "
        "re-embedded, removed ones deleted, unchanged ones kept.",
    )
    index.add_argument("folder", type=Path, metavar="DIR")
    index.add_argument(
        "--index",
        metavar="FILE",
        type=Path,
        required=True,
        help="the index file to create or update",
    )
    store_options(index)
    index.add_argument(
        "--embedder",
        choices=available_embedders(),
        default=None,
        help="default: the profile's, else an index's own profile's, else hashing",
    )
    chunker_options(index)
    limit_options(index)
    profile_options(index)
    long_work_options(index)
    index.add_argument("--json", action="store_true", help="print one JSON object")
    index.set_defaults(run=run_index)

    evaluate = commands.add_parser(
        "eval",
        help="score retrieval and answers on a labelled question set",
        description="Evaluate on a JSONL question set (see data/README.md).",
    )
    corpus_options(
        evaluate,
        k_help="the cut-off, in distinct documents, of recall, hit rate and "
        "MRR; answers see the top k chunks",
    )
    evaluate.add_argument(
        "--questions", metavar="FILE", type=Path, required=True, help="JSONL question set"
    )
    evaluate.add_argument(
        "--retrieval-only",
        action="store_true",
        help="score retrieval alone: no answers, no answer metrics (faster)",
    )
    evaluate.set_defaults(run=run_eval)
    add_chat_parser(commands, corpus_options)
    for name, summary in WORKBOOK_COMMANDS.items():
        commands.add_parser(name, help=summary, add_help=False)  # listed only, see above
    return parser


def add_chat_parser(
    commands: Any, corpus_options: Callable[[argparse.ArgumentParser], None]
) -> None:
    """The `chat` sub-command: the corpus and store options `ask` has, and its own."""
    chat = commands.add_parser(
        "chat",
        help="a conversation: follow-ups made standalone, history kept per user",
        description="Answer one question a line (stdin), each follow-up rewritten into a "
        "standalone question; the history is kept in the index file, per tenant and user. "
        "In the conversation: /sources, /forget, /quit.",
    )
    corpus_options(chat)
    chat.add_argument("--tenant", default="default", help="the asker's tenant (default 'default')")
    chat.add_argument("--groups", type=comma_list, default=(), help="the asker's groups")
    chat.add_argument("--user", default="cli", help="whose history this is (default 'cli')")
    chat.add_argument("--conversation", metavar="ID", help="continue this conversation")
    chat.add_argument(
        "--history-k", type=positive_int, default=2, help="past turns searched (default 2)"
    )
    chat.add_argument("--list", action="store_true", help="list this user's conversations")
    chat.add_argument(
        "--forget", action="store_true", help="forget every conversation of this user (tenant)"
    )
    chat.add_argument("--forget-conversation", metavar="ID", help="forget one conversation")
    chat.add_argument("--llm-url", metavar="URL", help="an OpenAI-compatible server (as ask's)")
    chat.add_argument("--llm-model", metavar="NAME", help="the model name for --llm-url")
    chat.add_argument("--llm-timeout", metavar="SECONDS", type=float, default=60.0)
    chat.set_defaults(run=run_chat)


def store_options(sub: argparse.ArgumentParser) -> None:
    """--store and --qdrant-url: where the --index lives."""
    from raglab.pipeline import BACKENDS

    sub.add_argument(
        "--store",
        choices=BACKENDS,
        default=None,
        help="where --index lives: sqlite (a file, the default) or qdrant (a folder, or a server)",
    )
    sub.add_argument(
        "--qdrant-url",
        metavar="URL",
        help="a Qdrant server, e.g. http://localhost:6333; --index names the index on it",
    )


def chunker_options(sub: argparse.ArgumentParser) -> None:
    """--chunker, --chunk-size, --overlap, --contextual; one left out takes the index's own,
    else the default."""
    from raglab.ingest.chunking import KINDS, Chunker

    default = Chunker()
    sub.add_argument(
        "--chunker",
        choices=KINDS,
        default=None,
        help=f"how to cut documents (default {default.kind}; an index keeps its own); "
        "semantic: where neighbouring sentences' embeddings diverge",
    )
    sub.add_argument(
        "--contextual",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="index each chunk with a header (title, heading path, the document's first "
        "sentence); quoted and cited text stays the chunk's own (default off)",
    )
    sub.add_argument(
        "--chunk-size",
        metavar="CHARS",
        type=positive_int,
        default=None,
        help=f"the largest chunk, in characters (default {default.size})",
    )
    sub.add_argument(
        "--overlap",
        metavar="CHARS",
        type=int,
        default=None,
        help=f"characters shared by neighbouring windows (default {default.overlap})",
    )


def limit_options(sub: argparse.ArgumentParser) -> None:
    """What indexing a folder may read: file size and count, chunks per document, secrets."""
    from raglab.ingest.loaders import SECRET_POLICIES
    from raglab.pipeline import Limits

    default = Limits()
    sub.add_argument(
        "--max-file-bytes",
        metavar="N",
        type=positive_int,
        default=default.max_bytes,
        help=f"skip larger files (default {default.max_bytes:_})",
    )
    sub.add_argument(
        "--max-files",
        metavar="N",
        type=positive_int,
        default=default.max_files,
        help=f"refuse a folder with more .md/.txt files (default {default.max_files:_})",
    )
    sub.add_argument(
        "--max-chunks",
        metavar="N",
        type=positive_int,
        default=default.max_chunks,
        help=f"skip a document cut into more chunks (default {default.max_chunks:_})",
    )
    sub.add_argument(
        "--secrets",
        choices=SECRET_POLICIES,
        default=default.secrets,
        help="a file holding a key, password or token: refuse it (default) or redact the secret",
    )


def long_work_options(sub: argparse.ArgumentParser) -> None:
    """--quiet and --no-cache: what embedding many documents shows, and what it keeps."""
    sub.add_argument(
        "--quiet",
        action="store_true",
        help="no progress line (it is drawn on stderr only when stderr is a terminal)",
    )
    sub.add_argument(
        "--no-cache",
        action="store_true",
        help="embed everything again, without the embedding cache (default: the user's cache "
        "folder, or RAGLAB_CACHE_DIR)",
    )


def selection_options(sub: argparse.ArgumentParser) -> None:
    """How chunks are chosen beyond the ranking: MMR, duplicates, query rewrites."""
    from raglab.retrieve.query_expansion import MODES

    sub.add_argument(
        "--mmr",
        metavar="LAMBDA",
        type=float,
        default=None,
        help="choose the top k by MMR, weighing relevance by LAMBDA (0-1) against novelty",
    )
    sub.add_argument(
        "--dedup",
        metavar="JACCARD",
        type=float,
        default=None,
        help="drop chunks whose word shingles overlap a better one's this much (0-1)",
    )
    sub.add_argument(
        "--expand",
        choices=MODES,
        default=None,
        help="rewrite the question from the readable chunks' words: expand it, or search "
        "several rewrites and fuse them (multi; with RAGLAB_LLM_URL the model writes more)",
    )
    sub.add_argument(
        "--hyde",
        action="store_true",
        help="with --expand multi and RAGLAB_LLM_URL: also search a passage the model imagines",
    )


def profile_options(sub: argparse.ArgumentParser) -> None:
    """--profile and --profiles: the settings that travel together (`raglab.profiles`).

    Every other option of the command overrides one field of the profile; an index records
    its profile, and asking it with a profile whose embedder or chunking differs is refused.
    """
    from raglab.profiles import shipped_profiles, user_profiles_path

    sub.add_argument(
        "--profile",
        metavar="NAME",
        default=None,
        help="a model profile: embedder, chunking in its tokens, k, fusion, reranker, "
        f"answerer and context budget together ({', '.join(sorted(shipped_profiles()))}, "
        "or yours); other options override one of its fields. Default: the one an index "
        "recorded, else raglab's defaults",
    )
    sub.add_argument(
        "--profiles",
        metavar="FILE",
        type=Path,
        default=None,
        help=f"a TOML file of your own profiles (also read: {user_profiles_path()}, if it exists)",
    )


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def comma_list(text: str) -> tuple[str, ...]:
    return tuple(sorted({part.strip() for part in text.split(",") if part.strip()}))
