"""GraphRAG, small and offline: entities and relations per access partition, communities,
their cited summaries, and the global and local searches over them."""
