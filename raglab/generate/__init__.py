"""raglab.generate."""
