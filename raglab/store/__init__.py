"""raglab.store."""
