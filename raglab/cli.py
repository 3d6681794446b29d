"""The `raglab` command: ask, index, eval — and, for the workbook, exercises, grade, progress.

Every failure a user can cause (a missing folder, a bad flag value, a corrupt index) ends
with a one-line `raglab: error: ...` on stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

EXAMPLES = """\
examples:
  raglab ask "How many vacation days do I get?" --docs data/corpus --tenant acme
  raglab index data/corpus --index corpus.sqlite
  raglab ask "What does error E-204 mean?" --index corpus.sqlite --tenant globex --json
  raglab eval --docs data/corpus --questions data/questions.jsonl --retriever bm25 --json
"""


USER_ERRORS = (ValueError, OSError, RuntimeError)
"""What a user can cause: bad input (StoreError, DocumentError, bad flag values are all
ValueErrors), a missing or unreadable file (OSError), a failing model or LLM server."""

EXIT_BROKEN_PIPE = 128 + 13
"""What a shell reports for a program ended by SIGPIPE (`raglab ... | head` stopped reading)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the one place where a user's error becomes `raglab: error: ...`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        code = run_command(argv)
        sys.stdout.flush()  # a closed pipe shows up here, inside the try, not at exit
        return code
    except BrokenPipeError:
        # The reader went away: stop quietly. Python would flush stdout again at exit and
        # print a second BrokenPipeError, so point stdout at /dev/null (as its docs advise).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except USER_ERRORS as error:
        print(f"raglab: error: {error}", file=sys.stderr)
        return 1


def run_command(argv: list[str]) -> int:
    one_blas_thread_for_ask(argv)
    # The workbook commands parse their own arguments.
    if argv[:1] == ["exercises"]:
        from raglab.workbook.exercises import exercises_command

        return exercises_command(argv[1:])
    if argv[:1] == ["grade"]:
        from raglab.workbook.grading import grade_command

        return grade_command(argv[1:])
    if argv[:1] == ["progress"]:
        from raglab.workbook.progress import progress_command

        return progress_command(argv[1:])
    args = build_parser().parse_args(argv)
    return args.run(args)


def one_blas_thread_for_ask(argv: Sequence[str]) -> None:
    """`raglab ask` answers one question and exits: starting BLAS's thread pool costs it more
    than the pool saves (cold ask at 20,000 documents: 0.45 -> 0.37 s of CPU). Only takes
    effect before numpy loads, as in a fresh `raglab` process; a user's own setting wins."""
    if argv[:1] == ["ask"]:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def build_parser() -> argparse.ArgumentParser:
    from raglab.embed.embedders import available_embedders
    from raglab.generate.prompting import ORDERS
    from raglab.query import METHODS

    parser = argparse.ArgumentParser(
        prog="raglab",
        description="A small, offline RAG engine: index a folder of documents, ask questions "
        "with cited answers, and evaluate retrieval.",
        epilog=EXAMPLES
        + "\nworkbook commands:\n  raglab exercises build|check   student notebooks\n"
        "  raglab grade PATH... [--csv FILE] [--summary]   grade learners' notebooks\n"
        "  raglab progress [FOLDER]   the exercises you have passed so far\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def corpus_options(sub: argparse.ArgumentParser, k_help: str = "how many chunks to retrieve"):
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
        sub.add_argument("--k", type=positive_int, default=5, help=f"{k_help} (default 5)")
        sub.add_argument(
            "--retriever", choices=METHODS, default="hybrid", help="ranking method (default hybrid)"
        )
        sub.add_argument(
            "--embedder",
            choices=available_embedders(),
            default=None,
            help="embedder for --docs (default hashing; an index remembers its own)",
        )
        chunker_options(sub)
        limit_options(sub)
        selection_options(sub)
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
        "chunks that fit, kept whole",
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
        "--embedder", choices=available_embedders(), default=None, help="default hashing"
    )
    chunker_options(index)
    limit_options(index)
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
    return parser


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


def store_of(args: argparse.Namespace) -> dict:
    """Index.open's and Index.from_folder's store arguments, from --store and --qdrant-url."""
    if args.index is None and (args.store or args.qdrant_url):
        raise ValueError("--store and --qdrant-url apply to --index, not to --docs")
    if args.qdrant_url and args.store == "sqlite":
        raise ValueError("--qdrant-url needs --store qdrant")
    backend = args.store or ("qdrant" if args.qdrant_url else "sqlite")
    return {"backend": backend, "qdrant_url": args.qdrant_url}


def chunker_options(sub: argparse.ArgumentParser) -> None:
    """--chunker, --chunk-size, --overlap; one left out takes the index's own, else the default."""
    from raglab.ingest.chunking import CUTTERS, Chunker

    default = Chunker()
    sub.add_argument(
        "--chunker",
        choices=tuple(CUTTERS),
        default=None,
        help=f"how to cut documents (default {default.kind}; an index keeps its own)",
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


def limits_of(args: argparse.Namespace):
    from raglab.pipeline import Limits

    return Limits(args.max_file_bytes, args.max_files, args.max_chunks, args.secrets)


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


def selection_of(args: argparse.Namespace) -> dict:
    """ask's and Index.search's `diversity` and `expansion`, from the options."""
    from raglab.generate.llm_rewrite import rewriter_from_env
    from raglab.retrieve.diversity import Diversity
    from raglab.retrieve.query_expansion import QueryExpansion

    diversity = None
    if args.mmr is not None or args.dedup is not None:
        try:
            diversity = Diversity(lambda_=args.mmr, dedup=args.dedup)
        except ValueError as error:
            raise ValueError(f"--mmr/--dedup: {error}") from None
    if args.hyde and args.expand != "multi":
        raise ValueError("--hyde needs --expand multi")
    expansion = None
    if args.expand is not None:
        rewriter = rewriter_from_env(hyde=args.hyde) if args.expand == "multi" else None
        if args.hyde and rewriter is None:
            raise ValueError(
                "--hyde needs a language model: set RAGLAB_LLM_URL and RAGLAB_LLM_MODEL"
            )
        expansion = QueryExpansion(args.expand, rewriter=rewriter)
    return {"diversity": diversity, "expansion": expansion}


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


def open_index(args: argparse.Namespace):
    """An Index from --docs (in memory) or --index (a file), reporting skipped files."""
    from raglab.pipeline import DEFAULT_EMBEDDER, Index

    where = store_of(args)
    if args.qdrant_keyword is not None and where["backend"] != "qdrant":
        raise ValueError("--qdrant-keyword applies to a Qdrant --index (--store qdrant)")
    if args.index is not None:
        if args.embedder is not None:
            raise ValueError(
                "--embedder applies to --docs; an index file uses the embedder it was built with"
            )
        index = Index.open(args.index, **where, qdrant_keyword=args.qdrant_keyword)
        check_chunker(args, index.chunker_params)
        return index
    embedder, chunker = args.embedder or DEFAULT_EMBEDDER, make_chunker(args)
    index = Index.from_folder(args.docs, embedder=embedder, chunker=chunker, limits=limits_of(args))
    warn_load_errors(index.load_errors)
    warn_loaded(index.warnings)
    return index


def make_chunker(args: argparse.Namespace, recorded: dict | None = None):
    """The Chunker the options ask for; one left out takes `recorded`'s value, else the default."""
    from raglab.ingest.chunking import Chunker

    given = {"kind": args.chunker, "size": args.chunk_size, "overlap": args.overlap}
    settings = {
        name: (recorded or {}).get(name) if value is None else value
        for name, value in given.items()
    }
    try:
        return Chunker(**{name: value for name, value in settings.items() if value is not None})
    except ValueError as error:
        raise ValueError(f"--chunker/--chunk-size/--overlap: {error}") from None


def check_chunker(args: argparse.Namespace, recorded: dict | None) -> None:
    """Refuse chunker options that differ from the ones an index file was built with."""
    if (args.chunker, args.chunk_size, args.overlap) == (None, None, None):
        return  # the index's own chunks, whatever they are
    wanted = make_chunker(args, recorded).params()
    if wanted != recorded:
        raise ValueError(
            f"index file {str(args.index)!r} was built with chunker {describe_chunker(recorded)}, "
            f"not {describe_chunker(wanted)}: leave out --chunker/--chunk-size/--overlap, "
            f"or rebuild it with `raglab index DIR --index {args.index}` and these options"
        )


def describe_chunker(params: dict | None) -> str:
    if not params:
        return "(none recorded)"
    names = ("kind", "size", "overlap", "version")
    return ", ".join(f"{name}={params.get(name)!r}" for name in names)


def warn_load_errors(errors) -> None:
    for error in errors:
        print(f"raglab: skipped {error}", file=sys.stderr)


def warn_loaded(warnings) -> None:
    for warning in warnings:  # loaded, but changed (a secret cut out) or doubtful
        print(f"raglab: warning: {warning}", file=sys.stderr)


def run_ask(args: argparse.Namespace) -> int:
    from raglab.pipeline import ask
    from raglab.records import Principal

    generator = make_generator(args)
    selection = selection_of(args)
    index = open_index(args)
    principal = Principal(args.user, args.tenant, args.groups)
    answer = ask(
        args.question,
        index,
        principal,
        k=args.k,
        method=args.retriever,
        generator=generator,
        max_tokens=args.max_tokens,
        order=args.order,
        **selection,
    )
    if args.json:
        print(json.dumps(answer_as_dict(answer), indent=2, ensure_ascii=False))
    else:
        print(format_answer(answer))
    return 0


def make_generator(args: argparse.Namespace):
    if args.llm_url is None:
        if args.llm_model is not None:
            raise ValueError("--llm-model needs --llm-url")
        return None
    if args.llm_model is None:
        raise ValueError("--llm-url needs --llm-model")
    from raglab.generate.openai_http import OpenAIChatGenerator

    key = os.environ.get("RAGLAB_API_KEY")
    return OpenAIChatGenerator(args.llm_url, args.llm_model, key, timeout=args.llm_timeout)


def hit_as_dict(n: int, hit) -> dict:
    chunk = hit.chunk
    return {
        "n": n,
        "doc_id": chunk.doc_id,
        "start": chunk.start,
        "end": chunk.end,
        "score": round(hit.score, 6),
    }


def answer_as_dict(answer) -> dict:
    return {
        "answer": answer.text,
        "abstained": answer.abstained,
        "verified": answer.verified,
        "citations": [hit_as_dict(c.n, c.hit) for c in answer.citations],
        "invalid_citations": list(answer.invalid_citations),
        "retrieved": [hit_as_dict(n, hit) for n, hit in enumerate(answer.retrieved, start=1)],
    }


def format_answer(answer) -> str:
    lines = [answer.text, ""]
    if answer.citations:
        lines.append("Sources:")
        for citation in answer.citations:
            chunk = citation.hit.chunk
            where = f" — {chunk.heading}" if chunk.heading else ""
            lines.append(
                f"  [{citation.n}] {chunk.doc_id}{where} (chars {chunk.start}-{chunk.end})"
            )
    elif not answer.abstained:
        lines.append("(no sources cited)")
    if answer.invalid_citations:
        markers = ", ".join(f"[{n}]" for n in answer.invalid_citations)
        lines.append(f"WARNING: citations {markers} do not refer to any retrieved source")
    return "\n".join(lines).rstrip()


def run_index(args: argparse.Namespace) -> int:
    from raglab.pipeline import DEFAULT_EMBEDDER, Index

    index = Index.from_folder(
        args.folder,
        embedder=args.embedder or DEFAULT_EMBEDDER,
        # An option left out keeps the index's own setting: an update never re-cuts by surprise.
        chunker=lambda recorded: make_chunker(args, recorded),
        path=args.index,
        limits=limits_of(args),
        **store_of(args),
    )
    warn_load_errors(index.load_errors)
    warn_loaded(index.warnings)
    report = index.report
    summary = {
        "index": str(args.index),
        "embedder": index.embedder.name,
        "chunker": report.chunker,
        "added": list(report.added),
        "updated": list(report.updated),
        "removed": list(report.removed),
        "unchanged": len(report.unchanged),
        "skipped": [str(error) for error in index.load_errors],
        "warnings": [str(warning) for warning in index.warnings],
        "rebuilt": report.rebuilt,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"indexed {args.folder} into {args.index} with the {index.embedder.name} embedder "
            f"({describe_chunker(report.chunker)}): "
            f"{len(report.added)} added, {len(report.updated)} updated, {len(report.removed)} removed, "
            f"{len(report.unchanged)} unchanged, {len(index.load_errors)} skipped"
        )
        if report.rebuilt:
            print(f"everything re-embedded: {report.rebuilt}")
    return 0


def run_eval(args: argparse.Namespace) -> int:
    from raglab.evaluation.runner import evaluate, format_table, load_questions
    from raglab.pipeline import ask

    load_questions(args.questions)  # a malformed file fails before the index is built
    selection = selection_of(args)
    index = open_index(args)
    questions = load_questions(args.questions, doc_ids=index.document_ids())

    def answer(q):
        return ask(q.question, index, q.asker, k=args.k, method=args.retriever, **selection)

    report = evaluate(
        questions,
        search=lambda q, depth: index.search(
            q.question, q.asker, k=depth, method=args.retriever, **selection
        ),
        answer=None if args.retrieval_only else answer,
        k=args.k,
        retriever=args.retriever,
        embedder=index.embedder.name,
    )
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(format_table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
