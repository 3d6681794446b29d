"""The history in Qdrant: a collection of its own beside the index's (`<name>_turns`).

The same rule as `raglab.conversation.sqlite_history`: every read and delete carries the
owner as a payload filter inside the query (tenant and user, on keyword-indexed fields),
so Qdrant hands back no other user's point. The owner's turns are then scored here with
the exact top-k every store uses, so the three histories return the same turns, ties
included. Forgetting deletes the points, vectors with them.
"""

from __future__ import annotations

import json
import uuid
import warnings
from typing import Any

import numpy as np

from raglab.conversation.history import groups_key, ranked, summaries
from raglab.conversation.turns import ConversationSummary, Turn, TurnHit
from raglab.records import Principal
from raglab.store._qdrant_points import count, field_is, qdrant, scroll
from raglab.store.qdrant_store import QdrantStore
from raglab.validation import check_int

SUFFIX = "turns"
_FIELDS = ("tenant", "user", "groups", "conversation")


class QdrantHistory:
    """The turns of a Qdrant index, in its `<name>_turns` collection (made on the first turn)."""

    def __init__(self, client: Any, collection: str) -> None:
        self._client = client
        self._collection = collection

    @classmethod
    def of(cls, store: QdrantStore) -> QdrantHistory:
        """The history beside `store`'s collections, through the store's own client."""
        return cls(*store.sibling(SUFFIX))

    def _owner(self, owner: Principal, *extra: Any) -> Any:
        conditions = [field_is("tenant", owner.tenant), field_is("user", owner.user), *extra]
        return qdrant().models.Filter(must=conditions)

    def _exists(self) -> bool:
        found: bool = self._client.collection_exists(self._collection)
        return found

    def _create(self, dim: int) -> None:
        models = qdrant().models
        self._client.create_collection(
            self._collection,
            vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
        )
        with warnings.catch_warnings():  # local mode warns that it scans without indexes
            warnings.simplefilter("ignore", UserWarning)
            for name in _FIELDS:
                self._client.create_payload_index(
                    self._collection, name, field_schema=models.PayloadSchemaType.KEYWORD
                )

    def add(self, owner: Principal, turn: Turn, vector: np.ndarray) -> None:
        if not self._exists():
            self._create(len(vector))
        key = json.dumps([owner.tenant, owner.user, turn.conversation, turn.n])
        payload = {
            "tenant": owner.tenant, "user": owner.user, "groups": groups_key(owner),
            "conversation": turn.conversation, "n": turn.n, "question": turn.question,
            "standalone": turn.standalone, "answer": turn.answer, "cited": list(turn.cited),
            "items": list(turn.items), "time": turn.time,
        }  # fmt: skip
        point = qdrant().models.PointStruct(
            id=str(uuid.uuid5(uuid.NAMESPACE_URL, key)),
            vector=np.asarray(vector, dtype=np.float32).tolist(),
            payload=payload,
        )
        self._client.upsert(self._collection, points=[point], wait=True)

    def _points(self, where: Any, *, vectors: bool = False) -> list[Any]:
        if not self._exists():
            return []
        points = scroll(self._client, self._collection, where, vectors=vectors)
        return sorted(points, key=lambda p: (p.payload["conversation"], p.payload["n"]))

    def search(
        self, owner: Principal, query: np.ndarray, k: int, *, conversation: str | None = None
    ) -> list[TurnHit]:
        check_int("k", k, minimum=1)
        extra = [field_is("groups", groups_key(owner))]
        if conversation is not None:
            extra.append(field_is("conversation", conversation))
        points = self._points(self._owner(owner, *extra), vectors=True)
        vectors = [np.asarray(p.vector, dtype=np.float32) for p in points]
        return ranked([_turn(p.payload) for p in points], vectors, query, k)

    def turns(self, owner: Principal, conversation: str) -> list[Turn]:
        where = self._owner(owner, field_is("conversation", conversation))
        return [_turn(p.payload) for p in self._points(where)]

    def conversations(self, owner: Principal) -> list[ConversationSummary]:
        return summaries([_turn(p.payload) for p in self._points(self._owner(owner))])

    def forget(self, owner: Principal, conversation: str | None = None) -> int:
        if not self._exists():
            return 0
        extra = [] if conversation is None else [field_is("conversation", conversation)]
        where = self._owner(owner, *extra)
        deleted = count(self._client, self._collection, where)
        selector = qdrant().models.FilterSelector(filter=where)
        self._client.delete(self._collection, points_selector=selector, wait=True)
        return deleted


def _turn(payload: dict[str, Any]) -> Turn:
    return Turn(
        payload["conversation"], payload["n"], payload["question"], payload["standalone"],
        payload["answer"], tuple(payload["cited"]), tuple(payload["items"]), payload["time"],
    )  # fmt: skip
