"""The one error type of the bundle package."""

from __future__ import annotations

__all__ = ["BundleError"]


class BundleError(ValueError):
    """A bundle cannot be built, read, verified or unpacked; the message names the file or entry."""
