"""raglab.ingest."""
