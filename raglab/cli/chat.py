"""`raglab chat`: a conversation in the terminal, its history kept in the index file.

One question a line, from a person or a pipe (`printf 'q1\\nq2\\n' | raglab chat ...`);
`/sources` shows what the last answer read (documents and past turns), `/forget` forgets
this conversation and starts another, `/quit` ends. `--json` prints one JSON object per
turn: `raglab ask --json`'s fields, plus `standalone` (the question as searched),
`rewrite` (why and what was carried; the prompt, when a model wrote it), `history` (the
past turns shown as context), `grounded`, `conversation` and `turn`. `--list` lists the
user's conversations, `--forget` forgets all of them, `--forget-conversation ID` one.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from raglab.cli.answers import answer_as_dict, format_answer
from raglab.cli.commands import store_of

if TYPE_CHECKING:
    from raglab.conversation.chat import ChatSession, ChatTurn
    from raglab.conversation.history import History
    from raglab.pipeline import Index

COMMANDS = ("/sources", "/forget", "/quit")


def open_history(args: argparse.Namespace, index: Index) -> History:
    """The index's history: the SQLite file's `turns` table, or the Qdrant index's `<name>_turns`
    collection; with --docs, one in memory (kept for this run only)."""
    from raglab.conversation.history import MemoryHistory

    if args.index is None:
        print("raglab: note: with --docs the history lasts for this run only", file=sys.stderr)
        return MemoryHistory()
    if store_of(args)["backend"] == "qdrant":
        from raglab.conversation.qdrant_history import QdrantHistory
        from raglab.store.qdrant_store import QdrantStore

        if not isinstance(index.store, QdrantStore):  # store_of chose it: cannot happen
            raise RuntimeError("a Qdrant index opened as another store")
        return QdrantHistory.of(index.store)
    from raglab.conversation.sqlite_history import SQLiteHistory

    return SQLiteHistory.open(args.index)


def run_chat(args: argparse.Namespace) -> int:
    from raglab.cli.commands import (
        k_and_method,
        make_generator,
        open_index,
        profile_model,
        selection_of,
    )
    from raglab.conversation.chat import ChatSession
    from raglab.conversation.llm_standalone import standalone_from_env
    from raglab.records import Principal

    principal = Principal(args.user, args.tenant, args.groups)
    generator = make_generator(args) or profile_model(args)
    selection = selection_of(args)
    index = open_index(args)
    k, method = k_and_method(args, index)  # --k and --retriever, else the index's profile's
    history = open_history(args, index)
    if args.list or args.forget or args.forget_conversation:
        return manage(args, history, principal)
    session = ChatSession(
        index, history, principal, args.conversation or "", k=k, history_k=args.history_k,
        method=method, generator=generator, model_rewriter=standalone_from_env(),
        **selection,
    )  # fmt: skip
    return converse(session, sys.stdin, as_json=args.json)


def manage(args: argparse.Namespace, history: History, principal: Any) -> int:
    """--list, --forget, --forget-conversation: print what was found or deleted."""
    if args.list:
        found = [vars_of(c) for c in history.conversations(principal)]
        if args.json:
            print(json.dumps({"conversations": found}, ensure_ascii=False))
        for c in [] if args.json else found:
            print(f"{c['conversation']}\t{c['turns']} turns\t{c['started']}\t{c['first_question']}")
        return 0
    deleted = history.forget(principal, args.forget_conversation)
    what = f"conversation {args.forget_conversation}" if args.forget_conversation else "everything"
    if args.json:
        print(json.dumps({"forgotten": deleted, "conversation": args.forget_conversation}))
    else:
        print(f"forgot {what} of user {args.user!r} in tenant {args.tenant!r}: {deleted} turns")
    return 0


def vars_of(summary: Any) -> dict[str, Any]:
    return {name: getattr(summary, name) for name in summary.__slots__}


def converse(session: ChatSession, lines: TextIO, *, as_json: bool) -> int:
    """Answer each line of `lines` as the next turn; commands start with '/'."""
    interactive = lines.isatty()
    last: ChatTurn | None = None
    while True:
        if interactive:
            print("you> ", end="", flush=True)
        line = lines.readline()
        if not line:
            return 0
        question = line.strip()
        if not question:
            continue
        if question == "/quit":
            return 0
        if question == "/forget":
            deleted = session.forget()
            show({"command": "/forget", "forgotten": deleted}, f"forgot {deleted} turns", as_json)
            last = None
        elif question == "/sources":
            show(sources_of(last), format_sources(last), as_json)
        elif question.startswith("/"):
            print(
                f"raglab: unknown command {question!r}; try {', '.join(COMMANDS)}", file=sys.stderr
            )
        else:
            try:
                last = session.ask(question)
            except ValueError as error:  # one bad question does not end the conversation
                print(f"raglab: error: {error}", file=sys.stderr)
                continue
            show(turn_as_dict(last), format_turn(last), as_json)


def show(obj: dict[str, Any], text: str, as_json: bool) -> None:
    print(json.dumps(obj, ensure_ascii=False) if as_json else text, flush=True)


def turn_as_dict(turn: ChatTurn) -> dict[str, Any]:
    """`raglab ask --json`'s object, and what the conversation added."""
    rewrite = turn.rewrite
    return {
        **answer_as_dict(turn.answer),
        "standalone": rewrite.standalone,
        "rewrite": {
            "rewritten": rewrite.rewritten,
            "reason": rewrite.reason,
            "antecedent": rewrite.antecedent,
            "carried": list(rewrite.carried),
            "prompt": list(turn.messages),
        },
        "history": [
            {
                "conversation": h.turn.conversation,
                "turn": h.turn.n,
                "question": h.turn.question,
                "standalone": h.turn.standalone,
                "score": round(h.score, 6),
            }
            for h in turn.history
        ],
        "grounded": turn.grounded,
        "conversation": turn.turn.conversation,
        "turn": turn.turn.n,
    }


def format_turn(turn: ChatTurn) -> str:
    searched = f"(searched as: {turn.rewrite.standalone})\n" if turn.rewrite.rewritten else ""
    return f"{searched}{format_answer(turn.answer)}\n"


def sources_of(turn: ChatTurn | None) -> dict[str, Any]:
    if turn is None:
        return {"command": "/sources", "retrieved": [], "history": []}
    found = turn_as_dict(turn)
    return {"command": "/sources", "retrieved": found["retrieved"], "history": found["history"]}


def format_sources(turn: ChatTurn | None) -> str:
    if turn is None:
        return "(no answer yet)"
    lines = ["Documents:"] + [
        f"  [{n}] {hit.chunk.doc_id} (chars {hit.chunk.start}-{hit.chunk.end})"
        for n, hit in enumerate(turn.answer.retrieved, start=1)
    ]
    earlier = [
        f"  conversation {h.turn.conversation}, turn {h.turn.n}: {h.turn.question}"
        for h in turn.history
    ]
    return "\n".join([*lines, "Earlier turns (context, not sources):", *(earlier or ["  (none)"])])
