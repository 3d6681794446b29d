"""The conversation wing: a follow-up made standalone, a history store beside the documents.

A language model is stateless: each question arrives alone. The illusion of a
conversation is built here, above the query path:

- `turns.py`: what one turn of a conversation keeps (`Turn`), and a retrieved turn (`TurnHit`);
- `history.py`: the `History` protocol (every read filtered by tenant and user) and the
  in-memory history;
- `sqlite_history.py`: the history as a table of the SQLite index file;
- `qdrant_history.py`: the history of a Qdrant index, a collection of its own;
- `rewrite.py`: the offline, deterministic rewrite of a follow-up into a standalone question;
- `llm_standalone.py`: the same step by a language model, the prompt shown;
- `allocation.py`: documents and history searched apart, in separate labelled prompt blocks
  with separate budgets; history is never a source;
- `chat.py`: one turn of a conversation, end to end (`ChatSession.ask`);
- `conversations.py`: the labelled conversations (`data/conversations.jsonl`), checked line by line.
"""
