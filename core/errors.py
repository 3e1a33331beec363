"""The one error type for user-caused problems, carrying where in the document it happened."""

from __future__ import annotations

__all__ = ["LinkwrightError"]


class LinkwrightError(Exception):
    """A problem in the user's document or input, with a JSON-path-like location."""

    def __init__(self, location: str, message: str) -> None:
        super().__init__(f"{location}: {message}" if location else message)
        self.location = location  # e.g. "joints[2].axis"; "" for the whole document
        self.message = message  # plain language, no traceback jargon

    def __reduce__(self):  # picklable, so errors can cross process boundaries
        return (type(self), (self.location, self.message))
