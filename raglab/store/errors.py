"""What goes wrong with a store, as exceptions a caller can catch by kind.

All are ValueErrors: the `raglab` command reports each as a one-line error.
"""

from __future__ import annotations

import shutil
from pathlib import Path


class StoreError(ValueError):
    """An index file cannot be used: missing, corrupt, not a raglab index, or a newer schema."""


class NoSpace(StoreError):
    """A write to an index file did not fit on its disk; SQLite rolled it back, so the index
    is as it was before."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(path, reason)
        self.path, self.reason = path, reason

    def __str__(self) -> str:
        # Measured when shown, not when raised: by then the write has been rolled back (the
        # file shrunk again, its journal gone), so these are the numbers the user finds.
        folder = self.path.resolve().parent
        try:
            free, size = shutil.disk_usage(folder).free, self.path.stat().st_size
        except OSError:
            free = size = 0
        return (
            f"index file {str(self.path)!r} was not changed: no space left on its device "
            f"({self.reason}; {free / 1e6:.1f} MB free in {str(folder)!r}). Free space there "
            f"(an update needs room for its new documents, and up to the index's own size, "
            f"{size / 1e6:.1f} MB, for its journal) and try again"
        )


class DimensionMismatch(ValueError):
    """A vector's length differs from the store's dimension."""


class EmbedderMismatch(ValueError):
    """An index is used with an embedder other than the one that built it."""
