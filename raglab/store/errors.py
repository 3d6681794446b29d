"""What goes wrong with a store, as exceptions a caller can catch by kind.

All three are ValueErrors: the `raglab` command reports each as a one-line error.
"""

from __future__ import annotations


class StoreError(ValueError):
    """An index file cannot be used: missing, corrupt, not a raglab index, or a newer schema."""


class DimensionMismatch(ValueError):
    """A vector's length differs from the store's dimension."""


class EmbedderMismatch(ValueError):
    """An index is used with an embedder other than the one that built it."""
