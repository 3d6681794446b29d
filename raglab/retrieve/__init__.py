"""raglab.retrieve."""
