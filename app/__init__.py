"""Linkwright desktop application (PySide6)."""
