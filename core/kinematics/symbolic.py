"""Symbolic loop-closure equations of planar loops (matrix method with sympy), for teaching and printing."""

from __future__ import annotations

import sympy

from ..errors import LinkwrightError
from ..model import Mechanism
from ..structure import analyze

__all__ = ["planar_loop_equations", "fourbar_loop_equations"]


def _elem(kind: str, q) -> sympy.Matrix:
    c, s = sympy.cos(q), sympy.sin(q)
    if kind == "rz":
        return sympy.Matrix([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    m = sympy.eye(4)
    m[{"tx": 0, "ty": 1}[kind], 3] = q
    return m


def _trans(x, y) -> sympy.Matrix:
    return _elem("tx", x) * _elem("ty", y)


def _inverse(M: sympy.Matrix) -> sympy.Matrix:
    """Inverse of a homogeneous transform by the block formula [[R^T, -R^T p], [0, 1]]."""
    Rt = M[:3, :3].T
    out = sympy.eye(4)
    out[:3, :3] = Rt
    out[:3, 3] = -Rt * M[:3, 3]
    return out


def planar_loop_equations(mech: Mechanism, loop: int = 0, numeric: bool = False) -> list[sympy.Expr]:
    """The three closure equations (x, y, angle) of fundamental loop `loop` in joint variables q_<joint>.

    Joint locations are symbols x_<joint>, y_<joint> (their numbers when `numeric`); each revolute joint is
    T(x, y) Rz(q) T(-x, -y), each prismatic T(x, y) R(axis) Tx(s) R(axis)^-1 T(-x, -y), each slot (pin in
    bodies[0], slot in bodies[1]) T(x, y) R(axis) Rz(q_<joint>.1) Tx(q_<joint>.0) R(axis)^-1 T(-x, -y) with
    q_<joint>.0 the slide along the slot and q_<joint>.1 the rotation (the coordinate names of the kinematic
    model); a joint run against the loop direction enters inverted. The loop product is E4."""
    if mech.space != "planar":
        raise LinkwrightError("space", "symbolic loop equations are written for planar documents")
    st = analyze(mech)
    if not 0 <= loop < len(st.fundamental_loops):
        raise LinkwrightError("loop", f"the mechanism has {len(st.fundamental_loops)} loop(s); no loop {loop}")
    T = sympy.eye(4)
    angle = 0
    for ji, d in zip(st.fundamental_loops[loop], st.loop_directions[loop]):
        j = mech.joints[ji]
        q = sympy.Symbol(f"q_{j.name}", real=True)
        if numeric:
            x, y = sympy.nsimplify(j.at[0]), sympy.nsimplify(j.at[1])
        else:
            x, y = sympy.symbols(f"x_{j.name} y_{j.name}", real=True)
        if j.type in ("prismatic", "slot"):
            ax = j.axis_vector()
            phi = sympy.atan2(sympy.nsimplify(ax[1]), sympy.nsimplify(ax[0])) if numeric else sympy.Symbol(f"phi_{j.name}", real=True)
        if j.type == "revolute":
            M = _elem("rz", q)
            angle += d * q
        elif j.type == "prismatic":
            M = _elem("rz", phi) * _elem("tx", q) * _elem("rz", -phi)
        elif j.type == "slot":
            s, r = sympy.symbols(f"q_{j.name}.0 q_{j.name}.1", real=True)
            M = _elem("rz", phi) * _elem("rz", r) * _elem("tx", s) * _elem("rz", -phi)
            angle += d * r
        elif j.type == "fixed":
            M = sympy.eye(4)
        else:
            raise LinkwrightError(f"joints[{ji}].type",
                                  f"symbolic loop equations support revolute, prismatic and slot joints, not {j.type}")
        if d < 0:
            M = _inverse(M)  # the same joint run backwards (its motion inverted)
        T = T * _trans(x, y) * M * _trans(-x, -y)
    return [sympy.simplify(T[0, 3]), sympy.simplify(T[1, 3]), angle]


def fourbar_loop_equations() -> list[sympy.Expr]:
    """Vector-loop equations a e^{i t2} + b e^{i t3} - c e^{i t4} - g = 0 of a four-bar (real and imaginary parts)."""
    g, a, b, c = sympy.symbols("g a b c", positive=True)
    t2, t3, t4 = sympy.symbols("theta2 theta3 theta4", real=True)
    return [a * sympy.cos(t2) + b * sympy.cos(t3) - c * sympy.cos(t4) - g,
            a * sympy.sin(t2) + b * sympy.sin(t3) - c * sympy.sin(t4)]
