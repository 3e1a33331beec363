"""The one error type for user-caused problems, carrying where in the document it happened."""

from __future__ import annotations

__all__ = ["LinkwrightError"]


def _printable(text: object) -> str:
    """`text` as one printable line: control characters, line separators and lone surrogates (which cannot be
    encoded) from a user's file are shown escaped, as Python would write them ('\\x0c', '\\ud800')."""
    s = str(text)
    return s if s.isprintable() else "".join(c if c.isprintable() else ascii(c)[1:-1] for c in s)


class LinkwrightError(Exception):
    """A problem in the user's document or input, with a JSON-path-like location."""

    def __init__(self, location: str, message: str) -> None:
        location, message = _printable(location), _printable(message)
        super().__init__(f"{location}: {message}" if location else message)
        self.location = location  # e.g. "joints[2].axis"; "" for the whole document
        self.message = message  # plain language, no traceback jargon

    def __reduce__(self):  # picklable, so errors can cross process boundaries
        return (type(self), (self.location, self.message))
