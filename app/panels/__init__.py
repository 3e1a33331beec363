"""The dockable views of the main window (each observes the Document and Selection)."""
