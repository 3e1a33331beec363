"""Symbolic planar loop equations with slot joints vanish on the numerical solution (both traversal directions)."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import sympy

from core import io
from core.kinematics import compile_model, solve_trajectory
from core.kinematics.symbolic import planar_loop_equations
from core.model import Driver
from core.structure import analyze

EXAMPLES = Path(__file__).resolve().parents[3] / "resources" / "examples"


def _slotted_fourbar(flip: bool):
    """The four-bar with its crank pin B running in a slot of the coupler (2 freedoms: crank angle and slide).

    The slot is a tree joint here (the loop is closed at C), traversed along or against its direction by `flip`."""
    m = io.load(EXAMPLES / "fourbar.json")
    k = next(i for i, j in enumerate(m.joints) if j.name == "B")
    b = m.joints[k]
    bodies = (b.bodies[1], b.bodies[0]) if flip else b.bodies
    m.joints[k] = dataclasses.replace(b, type="slot", bodies=bodies, axis=(2.831, 2.058, 0.0))  # along B -> C
    m.drivers.append(Driver("B", "0.2*sin(2*pi*t)", coordinate=0))  # the slide
    return m


def _check(m, numeric: bool, times) -> None:
    st = analyze(m)
    k = next(i for i, j in enumerate(m.joints) if j.type == "slot")
    loop = next(li for li, lp in enumerate(st.fundamental_loops) if k in lp)
    km = compile_model(m)
    traj = solve_trajectory(km, times)
    assert traj.ok, traj.reason
    names = [sympy.Symbol(f"q_{n}", real=True) for n in km.coord_names]
    eqs = planar_loop_equations(m, loop, numeric=numeric)
    free = set().union(*(e.free_symbols for e in eqs))
    assert sympy.Symbol(f"q_{m.joints[k].name}.0", real=True) in free  # the slide enters the equations
    geo = {}
    if not numeric:  # the symbolic geometry, evaluated with the document's numbers
        for j in m.joints:
            ax = j.axis_vector()
            geo |= {sympy.Symbol(f"x_{j.name}", real=True): j.at[0], sympy.Symbol(f"y_{j.name}", real=True): j.at[1],
                    sympy.Symbol(f"phi_{j.name}", real=True): float(np.arctan2(ax[1], ax[0]))}
    worst = 0.0
    for q in traj.q[1:]:  # moved configurations (the design one closes trivially)
        worst = max(worst, max(abs(float(e.subs(dict(zip(names, q)) | geo))) for e in eqs))
    assert worst < 1e-12
    # a configuration off the loop does not satisfy them (the equations are not vacuous)
    off = dict(zip(names, traj.q[-1] + 0.05)) | geo
    assert max(abs(float(e.subs(off))) for e in eqs) > 1e-3
    return st.loop_directions[loop][st.fundamental_loops[loop].index(k)]


@pytest.mark.parametrize("numeric", [True, False])
def test_quick_return_slot_equations_vanish_on_the_solved_motion(numeric):
    m = io.load(EXAMPLES / "quick_return.json")  # the slot closes the loop (chord, traversed forwards)
    assert _check(m, numeric, np.linspace(0.0, 0.3, 4)) == 1


def test_slot_as_tree_joint_in_both_directions():
    dirs = {_check(_slotted_fourbar(flip), True, np.linspace(0.0, 0.2, 4)) for flip in (False, True)}
    assert dirs == {1, -1}  # the inverted slot motion is exercised as well


def test_loop_equations_are_the_entries_of_the_loops_matrix_product():
    """planar_loop_equations forms the loop in its complex form (no sympy.simplify, whose cost has no bound); its x and
    y equations are entries (0, 3) and (1, 3) of the product of the joints' 4x4 matrices T(c) Rz(q) T(-c) (a joint run
    backwards inverted), built here with sympy matrices and compared at random values of every symbol."""
    m = io.load(EXAMPLES / "quick_return.json")  # revolutes, a slot and a prismatic joint, run both ways
    st = analyze(m)
    rng = np.random.default_rng(3)
    for loop in range(len(st.fundamental_loops)):
        eqs = planar_loop_equations(m, loop)
        T = sympy.eye(4)

        def rz(a):
            return sympy.Matrix([[sympy.cos(a), -sympy.sin(a), 0, 0], [sympy.sin(a), sympy.cos(a), 0, 0],
                                 [0, 0, 1, 0], [0, 0, 0, 1]])

        def tr(x, y):
            return sympy.Matrix([[1, 0, 0, x], [0, 1, 0, y], [0, 0, 1, 0], [0, 0, 0, 1]])

        for ji, d in zip(st.fundamental_loops[loop], st.loop_directions[loop]):
            j = m.joints[ji]
            x, y = sympy.symbols(f"x_{j.name} y_{j.name}", real=True)
            phi = sympy.Symbol(f"phi_{j.name}", real=True)
            if j.type == "revolute":
                M = rz(sympy.Symbol(f"q_{j.name}", real=True))
            elif j.type == "prismatic":  # R(phi) Tx(s) R(phi)^-1
                M = rz(phi) * tr(sympy.Symbol(f"q_{j.name}", real=True), 0) * rz(-phi)
            else:  # the slot: R(phi) Rz(r) Tx(s) R(phi)^-1
                s, r = sympy.symbols(f"q_{j.name}.0 q_{j.name}.1", real=True)
                M = rz(phi) * rz(r) * tr(s, 0) * rz(-phi)
            if d < 0:
                M = M.inv()
            T = T * tr(x, y) * M * tr(-x, -y)
        symbols = sorted(set().union(T[0, 3].free_symbols, T[1, 3].free_symbols, *(e.free_symbols for e in eqs[:2])),
                         key=str)
        for _ in range(3):
            vals = dict(zip(symbols, rng.uniform(-2.0, 2.0, len(symbols))))
            assert float(eqs[0].subs(vals)) == pytest.approx(float(T[0, 3].subs(vals)), abs=1e-12)
            assert float(eqs[1].subs(vals)) == pytest.approx(float(T[1, 3].subs(vals)), abs=1e-12)
