"""raglab.embed."""
