"""Synthetic mechanisms of any size, for benchmarks and stress tests (also handy in notebooks)."""

from __future__ import annotations

from .model import Body, Joint, Mechanism

__all__ = ["ladder"]


def ladder(n: int = 200) -> Mechanism:
    """A planar mechanism of n bodies: a revolute chain snaking over a 20-wide grid, a cross link every third body."""
    m = Mechanism(name=f"ladder{n}")
    for i in range(n):
        m.add_body(Body(f"b{i}", ground=(i == 0)), position=(160.0 * (i % 20), 110.0 * (i // 20)))

    def cell(i: int) -> tuple[float, float, float]:
        row, col = divmod(i, 20)
        return (float(col if row % 2 == 0 else 19 - col), float(row), 0.0)

    k = 0
    for i in range(n - 1):
        m.add_joint(Joint(f"J{k}", "revolute", (f"b{i}", f"b{i + 1}"), at=cell(i)))
        k += 1
        if i % 3 == 0 and i + 3 < n:
            x, y, _ = cell(i)
            m.add_joint(Joint(f"J{k}", "revolute", (f"b{i}", f"b{i + 3}"), at=(x + 0.5, y + 0.5, 0.0)))
            k += 1
    return m
