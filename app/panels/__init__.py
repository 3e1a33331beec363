"""The dockable views of the main window (each observes the Document and Selection)."""


def shortened(name: str, n: int) -> str:
    """name, or its first n - 1 characters and "…" when longer than n (titles and headers; tooltips keep it whole)."""
    return name if len(name) <= n else name[:n - 1] + "…"
