"""The one error type for user-caused problems, carrying where in the document it happened."""

from __future__ import annotations

__all__ = ["LinkwrightError"]


def _printable(text: object) -> str:
    """`text` with anything that cannot be encoded as UTF-8 (a lone surrogate from a file) escaped, one line."""
    s = str(text)
    s = s.encode("utf-8", "backslashreplace").decode("utf-8")
    return s.replace("\r", "\\r").replace("\n", " ") if ("\n" in s or "\r" in s) else s


class LinkwrightError(Exception):
    """A problem in the user's document or input, with a JSON-path-like location."""

    def __init__(self, location: str, message: str) -> None:
        location, message = _printable(location), _printable(message)
        super().__init__(f"{location}: {message}" if location else message)
        self.location = location  # e.g. "joints[2].axis"; "" for the whole document
        self.message = message  # plain language, no traceback jargon

    def __reduce__(self):  # picklable, so errors can cross process boundaries
        return (type(self), (self.location, self.message))
