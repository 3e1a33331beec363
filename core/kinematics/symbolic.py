"""Symbolic loop-closure equations of planar loops (matrix method with sympy), for teaching and printing."""

from __future__ import annotations

import sympy

from ..errors import LinkwrightError
from ..model import Mechanism
from ..structure import analyze

__all__ = ["planar_loop_equations", "fourbar_loop_equations"]


def _compose(acc, g):
    """acc followed inside by g, planar rigid motions z -> e^{i theta} z + t as (theta, terms): t is the sum of the
    terms (a, b, alpha), each (a + i b) e^{i alpha}.  (acc o g)(z) = e^{i Theta} (e^{i theta} z + t_g) + t_acc."""
    Theta, t_acc = acc
    theta, t_g = g
    return Theta + theta, t_acc + [(a, b, alpha + Theta) for a, b, alpha in t_g]


def _inverse(g):
    """The inverse motion: z -> e^{-i theta} (z - t)."""
    theta, t = g
    return -theta, [(-a, -b, alpha - theta) for a, b, alpha in t]


def planar_loop_equations(mech: Mechanism, loop: int = 0, numeric: bool = False) -> list[sympy.Expr]:
    """The three closure equations (x, y, angle) of fundamental loop `loop` in joint variables q_<joint>.

    Joint locations are symbols x_<joint>, y_<joint> (their numbers when `numeric`); each revolute joint is
    T(x, y) Rz(q) T(-x, -y), each prismatic T(x, y) R(axis) Tx(s) R(axis)^-1 T(-x, -y), each slot (pin in
    bodies[0], slot in bodies[1]) T(x, y) R(axis) Rz(q_<joint>.1) Tx(q_<joint>.0) R(axis)^-1 T(-x, -y) with
    q_<joint>.0 the slide along the slot and q_<joint>.1 the rotation (the coordinate names of the kinematic
    model); a joint run against the loop direction enters inverted. The loop product is E4.

    The product of the loop's 4x4 matrices is formed in its planar (complex) form, each motion z -> e^{i theta} z + t
    with c = x + i y its joint's location: a revolute is (q, c - e^{iq} c), a prismatic (0, s e^{i phi}), a slot
    (r, c - e^{ir} c + s e^{i(phi + r)}).  The x and y equations are then the real and imaginary parts of the loop's
    translation, sums of a cos(alpha) and b sin(alpha) with alpha the sums of joint angles, like terms collected:
    the same equations as the matrices' entries, built in time linear in the loop's length (sympy's simplify, used
    before, has no bound on its cost and once took over 300 s on the quick-return loop)."""
    if mech.space != "planar":
        raise LinkwrightError("space", "symbolic loop equations are written for planar documents")
    st = analyze(mech)
    if not 0 <= loop < len(st.fundamental_loops):
        raise LinkwrightError("loop", f"the mechanism has {len(st.fundamental_loops)} loop(s); no loop {loop}")
    acc = (sympy.Integer(0), [])
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
        zero = sympy.Integer(0)
        if j.type == "revolute":
            g = (q, [(x, y, zero), (-x, -y, q)])
            angle += d * q
        elif j.type == "prismatic":
            g = (zero, [(q, zero, phi)])
        elif j.type == "slot":
            s, r = sympy.symbols(f"q_{j.name}.0 q_{j.name}.1", real=True)
            g = (r, [(x, y, zero), (-x, -y, r), (s, zero, phi + r)])
            angle += d * r
        elif j.type == "fixed":
            g = (zero, [])
        else:
            raise LinkwrightError(f"joints[{ji}].type",
                                  f"symbolic loop equations support revolute, prismatic and slot joints, not {j.type}")
        acc = _compose(acc, _inverse(g) if d < 0 else g)  # (a joint run backwards: its motion inverted)
    by_angle: dict = {}
    for a, b, alpha in acc[1]:
        key = sympy.expand(alpha)
        ra, rb = by_angle.get(key, (0, 0))
        by_angle[key] = (ra + a, rb + b)
    ex = ey = sympy.Integer(0)
    for alpha, (a, b) in by_angle.items():
        a, b = sympy.expand(a), sympy.expand(b)
        ex += a * sympy.cos(alpha) - b * sympy.sin(alpha)
        ey += a * sympy.sin(alpha) + b * sympy.cos(alpha)
    return [ex, ey, angle]


def fourbar_loop_equations() -> list[sympy.Expr]:
    """Vector-loop equations a e^{i t2} + b e^{i t3} - c e^{i t4} - g = 0 of a four-bar (real and imaginary parts)."""
    g, a, b, c = sympy.symbols("g a b c", positive=True)
    t2, t3, t4 = sympy.symbols("theta2 theta3 theta4", real=True)
    return [a * sympy.cos(t2) + b * sympy.cos(t3) - c * sympy.cos(t4) - g,
            a * sympy.sin(t2) + b * sympy.sin(t3) - c * sympy.sin(t4)]
