"""Follow-ups measured: each labelled conversation played through a `ChatSession`.

Three ways to search a follow-up (`MODES`): as asked ("none"), rewritten by the offline
rules ("offline", `raglab.conversation.rewrite`), or as its gold standalone form
("gold"). For each follow-up: recall@k of the documents its search ranks, and whether
the answer cites a relevant document. Beside them: whether the rules rewrote what must be
rewritten and left alone what must not; how many document chunks the history displaced
from the prompt (separate allocations: none, by construction, checked), and how many it
would displace with one shared top-k (`raglab.conversation.allocation.shared_top_k`);
and leaks: turns of one user found by any other (`history_leaks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from raglab.conversation.allocation import displaced, shared_top_k
from raglab.conversation.chat import ChatSession
from raglab.conversation.conversations import Conversation
from raglab.conversation.history import History, MemoryHistory
from raglab.conversation.rewrite import Rewrite, standalone
from raglab.conversation.turns import Turn
from raglab.evaluation.metrics import mrr, recall_at_k, unique_in_order
from raglab.generate.prompting import build_prompt
from raglab.pipeline import Index
from raglab.records import Principal

MODES = ("none", "offline", "gold")
DEPTH = 20  # chunks searched to rank documents for recall@k


def as_asked(question: str, turns: Sequence[Turn]) -> Rewrite:
    """No rewrite: every question searched as asked."""
    return Rewrite(question, question, "not rewritten")


@dataclass(frozen=True, slots=True)
class FollowUp:
    """One follow-up (turn 2 on) of a conversation, searched one way (`mode`)."""

    conversation: str
    split: str
    turn: int
    question: str
    kind: str
    must_rewrite: bool
    mode: str
    standalone: str
    recall: float
    reciprocal_rank: float  # 1 / the rank of the first relevant document (0 beyond DEPTH chunks)
    cited_relevant: bool
    grounded: bool
    displaced: int  # document chunks the history pushed out of the prompt (separate budgets)
    displaced_shared: int  # ... would push out of one shared top-k


def play(
    index: Index,
    conversation: Conversation,
    mode: str,
    *,
    k: int = 5,
    history: History | None = None,
) -> list[FollowUp]:
    """Play `conversation` as its principal, each question searched as `mode` says."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)} (got {mode!r})")
    gold = {t.question: t.standalone for t in conversation.turns}

    def gold_rewrite(question: str, turns: Sequence[Turn]) -> Rewrite:
        return Rewrite(question, gold[question], "gold")

    rewriter = {"none": as_asked, "offline": standalone, "gold": gold_rewrite}[mode]
    owner = conversation.principal
    history = MemoryHistory() if history is None else history
    session = ChatSession(index, history, owner, conversation.id, k=k, rewriter=rewriter)
    found = []
    for n, labelled in enumerate(conversation.turns, start=1):
        searched = rewriter(labelled.question, session.turns()).standalone
        shared = _shared_displaced(index, session, searched, k)
        chat = session.ask(labelled.question)
        if n == 1:
            continue
        hits = index.search(searched, owner, k=DEPTH, method=session.method)
        ranked = unique_in_order(h.chunk.doc_id for h in hits)
        # the prompt without any history, from the same search the session made (a fused
        # ranking can depend on its depth, so not hits[:k])
        same = index.search(searched, owner, k=k, method=session.method)
        alone = build_prompt(searched, same).sources
        relevant = set(labelled.relevant_docs)
        found.append(
            FollowUp(
                conversation.id, conversation.split, n, labelled.question, labelled.kind,
                labelled.must_rewrite,
                mode, searched, recall_at_k(ranked, relevant, k), mrr(ranked, relevant),
                not chat.answer.abstained
                and any(c.hit.chunk.doc_id in relevant for c in chat.answer.citations),
                chat.grounded, sum(1 for h in alone if h not in chat.answer.retrieved), shared,
            )
        )  # fmt: skip
    return found


def _shared_displaced(index: Index, session: ChatSession, question: str, k: int) -> int:
    """Document chunks of the dense top-k that one shared ranking with every past turn of
    the owner (scored with the same cosine) would leave out."""
    documents = index.search(question, session.principal, k=k, method="dense")
    turns = session.history.search(session.principal, session.embed(question), 1000)
    return displaced(documents, shared_top_k(documents, turns, k), k)


def history_leaks(history: History, conversations: Sequence[Conversation], index: Index) -> int:
    """Turns of one conversation's user that anyone else finds or lists: another user of the
    same tenant or the same user name in another tenant (neither may find or list them), and
    the same user asking with other groups (who may list but not find them)."""
    leaks = 0
    owners = {c.principal for c in conversations}
    for conversation in conversations:
        owner = conversation.principal
        others = [  # other people: they may neither find nor list a turn
            Principal(f"{owner.user}-other", owner.tenant, owner.groups),
            Principal(owner.user, f"{owner.tenant}-other", owner.groups),
        ]
        regrouped = Principal(owner.user, owner.tenant, owner.groups | {"intruders"})
        session = ChatSession(index, MemoryHistory(), owner)
        for intruder in [*(o for o in others if o not in owners), regrouped]:
            for labelled in conversation.turns:
                query = session.embed(labelled.standalone)
                leaks += len(history.search(intruder, query, 1000))
        leaks += sum(c.turns for o in others if o not in owners for c in history.conversations(o))
    return leaks
