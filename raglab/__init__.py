"""raglab: a small, readable, offline RAG engine."""
