"""What `raglab ask`, `raglab index` and `raglab eval` do with their options.

Each asks the engine's `Index` (`raglab.pipeline`), never a store: the options become an
`Index` (opened, or built from a folder) and the arguments of `ask`, `Index.search` and
`evaluate`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from raglab.cli.answers import answer_as_dict, format_answer

if TYPE_CHECKING:  # the engine is imported when a command runs, not when the CLI loads
    from raglab.embed.embedders import Embedder
    from raglab.evaluation.questions import Question
    from raglab.generate.openai_http import OpenAIChatGenerator
    from raglab.ingest.chunking import Chunker
    from raglab.ingest.loaders import DocumentError
    from raglab.pipeline import Index, Limits
    from raglab.profiles import Profile
    from raglab.progress import Reporter
    from raglab.records import Answer, Principal
    from raglab.retrieve.diversity import Diversity
    from raglab.retrieve.query_expansion import QueryExpansion


class StoreArguments(TypedDict):
    backend: str
    qdrant_url: str | None


class Selection(TypedDict):
    diversity: Diversity | None
    expansion: QueryExpansion | None


def store_of(args: argparse.Namespace) -> StoreArguments:
    """Index.open's and Index.from_folder's store arguments, from --store and --qdrant-url."""
    if args.index is None and (args.store or args.qdrant_url):
        raise ValueError("--store and --qdrant-url apply to --index, not to --docs")
    if args.qdrant_url and args.store == "sqlite":
        raise ValueError("--qdrant-url needs --store qdrant")
    backend = args.store or ("qdrant" if args.qdrant_url else "sqlite")
    return {"backend": backend, "qdrant_url": args.qdrant_url}


def limits_of(args: argparse.Namespace) -> Limits:
    from raglab.pipeline import Limits

    return Limits(args.max_file_bytes, args.max_files, args.max_chunks, args.secrets)


def selection_of(args: argparse.Namespace) -> Selection:
    """ask's and Index.search's `diversity` and `expansion`, from the options."""
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
        rewriter = None
        if args.expand == "multi":  # a language model writes rewrites too, when one is set
            from raglab.generate.llm_rewrite import rewriter_from_env

            rewriter = rewriter_from_env(hyde=args.hyde)
        if args.hyde and rewriter is None:
            raise ValueError(
                "--hyde needs a language model: set RAGLAB_LLM_URL and RAGLAB_LLM_MODEL"
            )
        expansion = QueryExpansion(args.expand, rewriter=rewriter)
    return {"diversity": diversity, "expansion": expansion}


def chosen_profile(args: argparse.Namespace) -> Profile | None:
    """The profile --profile names (shipped, yours, or in --profiles FILE), or None."""
    from raglab.profiles import profile

    if args.profile is None:
        if args.profiles is not None:
            raise ValueError("--profiles FILE needs --profile NAME (one of the file's profiles)")
        return None
    return profile(args.profile, profiles_file=args.profiles)


def profile_chunker(profile: Profile | None) -> dict[str, Any] | None:
    """The chunker settings a profile indexes with, as `make_chunker` takes them."""
    return None if profile is None else profile.chunker().params()


def open_index(args: argparse.Namespace) -> Index:
    """An Index from --docs (in memory) or --index (a file), reporting skipped files.

    With --profile, --docs is indexed with the profile, and an --index built with another
    embedder or chunking is refused (`raglab.profiles.refusal`)."""
    from raglab.pipeline import Index

    where = store_of(args)
    if args.qdrant_keyword is not None and where["backend"] != "qdrant":
        raise ValueError("--qdrant-keyword applies to a Qdrant --index (--store qdrant)")
    profile = chosen_profile(args)
    if args.index is not None:
        if args.embedder is not None:
            raise ValueError(
                "--embedder applies to --docs; an index file uses the embedder it was built with"
            )
        index = Index.open(args.index, **where, qdrant_keyword=args.qdrant_keyword, profile=profile)
        check_chunker(args, index.chunker_params)
        return index
    index = Index.from_folder(
        args.docs,
        embedder=embedder_of(args, profile),
        chunker=make_chunker(args, profile_chunker(profile)),
        limits=limits_of(args),
        profile=profile,
        progress=progress_of(args),
    )
    warn_load_errors(index.load_errors)
    warn_loaded(index.warnings)
    return index


def k_and_method(args: argparse.Namespace, index: Index) -> tuple[int, str]:
    """--k and --retriever, else the index's profile's (`Index.k`, `Index.method`)."""
    return args.k or index.k, args.retriever or index.method


# --- long work: the embedding cache and progress ---------------------------------------------


def embedder_of(
    args: argparse.Namespace, profile: Profile | None, *, updating: bool = False
) -> Embedder | None:
    """--embedder, else the profile's, else (for a new index) the default, with the embedding
    cache on disk unless --no-cache. None when updating an index and neither names one: the
    profile the index recorded decides, and an update embeds only what changed."""
    from raglab.embed.embedders import embedder
    from raglab.embed.embedding_cache import cached
    from raglab.pipeline import DEFAULT_EMBEDDER

    name = args.embedder or (profile.embedder if profile is not None else None)
    if name is None and updating:
        return None
    name = name or DEFAULT_EMBEDDER
    made = embedder(name)
    return made if args.no_cache else cached(made)


def is_update(args: argparse.Namespace) -> bool:
    """Whether `raglab index` adds to an index that exists (a Qdrant server's always may)."""
    return args.qdrant_url is not None or Path(args.index).exists()


def progress_of(args: argparse.Namespace) -> Reporter | None:
    """A progress line on stderr when it is a terminal (`TerminalProgress`), unless --quiet."""
    from raglab.progress import TerminalProgress

    return None if args.quiet else TerminalProgress()


def make_chunker(args: argparse.Namespace, recorded: Mapping[str, Any] | None = None) -> Chunker:
    """The Chunker the options ask for; one left out takes `recorded`'s value, else the default."""
    from raglab.ingest.chunking import Chunker

    given = {
        "kind": args.chunker,
        "size": args.chunk_size,
        "overlap": args.overlap,
        "contextual": args.contextual,
    }
    settings = {
        name: (recorded or {}).get(name) if value is None else value
        for name, value in given.items()
    }
    if settings["contextual"]:  # the sentence: RAGLAB_LLM_URL's model's, else the first one
        from raglab.generate.llm_context import context_writer_from_env

        settings["context_writer"] = context_writer_from_env()
    try:
        return Chunker(**{name: value for name, value in settings.items() if value is not None})
    except ValueError as error:
        raise ValueError(f"--chunker/--chunk-size/--overlap/--contextual: {error}") from None


def check_chunker(args: argparse.Namespace, recorded: Mapping[str, Any] | None) -> None:
    """Refuse chunker options that differ from the ones an index file was built with."""
    if (args.chunker, args.chunk_size, args.overlap, args.contextual) == (None,) * 4:
        return  # the index's own chunks, whatever they are
    wanted = make_chunker(args, recorded).params()
    if wanted != recorded:
        raise ValueError(
            f"index file {str(args.index)!r} was built with chunker {describe_chunker(recorded)}, "
            f"not {describe_chunker(wanted)}: leave out --chunker/--chunk-size/--overlap/--contextual, "
            f"or rebuild it with `raglab index DIR --index {args.index}` and these options"
        )


def describe_chunker(params: Mapping[str, object] | None) -> str:
    if not params:
        return "(none recorded)"
    names = ("kind", "size", "overlap", "version")
    described = ", ".join(f"{name}={params.get(name)!r}" for name in names)
    if params.get("contextual"):
        described += f", contextual=True, context by {params.get('context', 'first sentence')}"
    return described


def warn_load_errors(errors: Iterable[DocumentError]) -> None:
    for error in errors:
        print(f"raglab: skipped {error}", file=sys.stderr)


def warn_loaded(warnings: Iterable[DocumentError]) -> None:
    for warning in warnings:  # loaded, but changed (a secret cut out) or doubtful
        print(f"raglab: warning: {warning}", file=sys.stderr)


def run_ask(args: argparse.Namespace) -> int:
    from raglab.generate.prompting import check_question
    from raglab.pipeline import ask
    from raglab.records import Principal

    check_question(args.question)  # before the index is opened: refused in a moment
    generator = make_generator(args) or profile_model(args)
    selection = selection_of(args)
    index = open_index(args)
    principal = Principal(args.user, args.tenant, args.groups)
    if args.agent and args.graph is not None:
        raise ValueError("--agent and --graph are two ways to answer: choose one")
    if args.agent:
        return run_agent_ask(args, index, principal, generator)
    if args.graph is not None:
        answer = graph_answer(args, index, principal)
    else:
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


def graph_answer(args: argparse.Namespace, index: Index, principal: Principal) -> Answer:
    """`ask --graph global|local`: the answer through the asker's entity graph
    (`raglab.graph.search`), its sources counted in WordPiece tokens."""
    from raglab.embed.tokens import wordpiece_counter
    from raglab.graph.reader import GraphIndex
    from raglab.graph.search import DEFAULT_TOKENS, graph_ask

    if args.llm_url is not None:
        raise ValueError("--graph answers offline, by quoting: leave out --llm-url")
    budget = args.max_tokens or DEFAULT_TOKENS
    return graph_ask(
        args.question,
        GraphIndex(index),
        principal,
        mode=args.graph,
        count=wordpiece_counter(),
        max_tokens=budget,
    )


def run_agent_ask(
    args: argparse.Namespace,
    index: Index,
    principal: Principal,
    generator: OpenAIChatGenerator | None,
) -> int:
    """`raglab ask --agent`: the agent's loop; with --llm-url the model plans it too."""
    from raglab.agent.loop import run_agent
    from raglab.agent.model_planner import ModelPlanner
    from raglab.cli.answers import agent_as_dict, format_agent

    planner = None if generator is None else ModelPlanner(generator)
    run = run_agent(
        args.question, index, principal, planner=planner, method=k_and_method(args, index)[1],
        generator=generator,
    )  # fmt: skip
    if args.json:
        print(json.dumps(agent_as_dict(run), indent=2, ensure_ascii=False))
    else:
        print(format_agent(run))
    return 0


def make_generator(args: argparse.Namespace) -> OpenAIChatGenerator | None:
    if args.llm_url is None:
        if args.llm_model is not None:
            raise ValueError("--llm-model needs --llm-url")
        return None
    if args.llm_model is None:
        raise ValueError("--llm-url needs --llm-model")
    from raglab.generate.openai_http import OpenAIChatGenerator

    key = os.environ.get("RAGLAB_API_KEY")
    return OpenAIChatGenerator(args.llm_url, args.llm_model, key, timeout=args.llm_timeout)


def profile_model(args: argparse.Namespace) -> OpenAIChatGenerator | None:
    """The model --profile answers with (with --llm-timeout), made before the index is
    opened: a server left unset is reported in a moment. None for an offline profile."""
    profile = chosen_profile(args)
    if profile is None or profile.answerer != "openai":
        return None
    return profile.model(timeout=args.llm_timeout)


def run_index(args: argparse.Namespace) -> int:
    from raglab.pipeline import Index

    profile = chosen_profile(args)
    index = Index.from_folder(
        args.folder,
        embedder=embedder_of(args, profile, updating=is_update(args)),
        # An option left out keeps the profile's setting, else the index's own: an update
        # never re-cuts by surprise.
        chunker=lambda recorded: make_chunker(args, profile_chunker(profile) or recorded),
        path=args.index,
        limits=limits_of(args),
        profile=profile,
        progress=progress_of(args),
        **store_of(args),
    )
    warn_load_errors(index.load_errors)
    warn_loaded(index.warnings)
    report = index.report
    if report is None:  # from_folder always reports the sync it ran
        raise RuntimeError("Index.from_folder returned no sync report")
    summary = {
        "index": str(args.index),
        "profile": None if index.profile is None else index.profile.name,
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
        named = "" if index.profile is None else f", profile {index.profile.name}"
        print(
            f"indexed {args.folder} into {args.index} with the {index.embedder.name} embedder "
            f"({describe_chunker(report.chunker)}{named}): "
            f"{len(report.added)} added, {len(report.updated)} updated, {len(report.removed)} removed, "
            f"{len(report.unchanged)} unchanged, {len(index.load_errors)} skipped"
        )
        if report.rebuilt:
            print(f"everything re-embedded: {report.rebuilt}")
    return 0


def warn_refused_relevant(questions: Sequence[Question], refused: Mapping[str, str]) -> None:
    """One warning per question whose relevant document exists but was refused at load: the
    run goes on without it (a question left with no relevant document that loaded counts as
    unanswerable by refusal, reported apart)."""
    from raglab.text import shown

    for question in questions:
        for doc_id in question.relevant_docs:
            if doc_id in refused:
                print(
                    f"raglab: warning: question {shown(question.id)} names {shown(doc_id)}, "
                    f"which was refused at load ({refused[doc_id]}): it cannot be retrieved",
                    file=sys.stderr,
                )


def run_eval(args: argparse.Namespace) -> int:
    from raglab.evaluation.runner import evaluate, format_table, load_questions
    from raglab.ingest.loaders import candidate_ids
    from raglab.pipeline import ask

    # A malformed file, or (with --docs) a document id that names no file of the folder,
    # fails in a moment, before anything is indexed.
    before = candidate_ids(args.docs) if args.docs is not None else None
    load_questions(args.questions, doc_ids=before or None)
    selection = selection_of(args)
    index = open_index(args)
    refused = {error.path: error.reason for error in index.load_errors}
    questions = load_questions(args.questions, doc_ids=index.document_ids() | refused.keys())
    warn_refused_relevant(questions, refused)

    k, method = k_and_method(args, index)

    def answer(q: Question) -> Answer:
        return ask(q.question, index, q.asker, k=k, method=method, **selection)

    report = evaluate(
        questions,
        search=lambda q, depth: index.search(
            q.question, q.asker, k=depth, method=method, **selection
        ),
        answer=None if args.retrieval_only else answer,
        k=k,
        retriever=method,
        embedder=index.embedder.name,
        refused_docs=refused.keys(),
        progress=progress_of(args),
    )
    if args.json:
        profile = None if index.profile is None else index.profile.name
        print(json.dumps({**report.as_dict(), "profile": profile}, indent=2))
    else:
        print(format_table(report))
    return 0
