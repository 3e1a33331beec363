"""Linkwright engine: mechanism model, file format, structure, kinematics and contact dynamics (no Qt)."""

__version__ = "0.1.0"
__all__ = ["__version__"]
