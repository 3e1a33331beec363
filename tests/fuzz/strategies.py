"""Hypothesis strategies of the fuzz suite: mutated example documents, driver expressions from the whitelist
grammar, and command-line arguments, each biased towards the values the campaign of issue 21 found harmful."""

from __future__ import annotations

import copy
import json
import math
import os

from hypothesis import settings
from hypothesis import strategies as st

from core.expr import CONSTANTS, FUNCTIONS
from tests.conftest import EXAMPLES

# Cases per fuzz test: a bounded number in the normal test command, many more on request
# (LINKWRIGHT_FUZZ_EXAMPLES=5000 pytest tests/fuzz runs 5000 of each, with a fresh random seed).
FUZZ_EXAMPLES = int(os.environ.get("LINKWRIGHT_FUZZ_EXAMPLES", "0") or 0)


def fuzz_timeout(default: int) -> float:
    """pytest-timeout seconds for a fuzz test: the suite's 300 s, plus 2 s per case beyond `default` (a long
    campaign must not be cut off, and a timeout inside hypothesis would be replayed as a failure)."""
    return 300.0 + 2.0 * max(0, FUZZ_EXAMPLES - default)


def fuzz_settings(default: int) -> settings:
    """`default` cases, derandomised (CI sees the same ones every run), or LINKWRIGHT_FUZZ_EXAMPLES random ones."""
    from hypothesis import HealthCheck

    return settings(max_examples=FUZZ_EXAMPLES or default, derandomize=not FUZZ_EXAMPLES, deadline=None,
                    database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])


EXAMPLE_DOCS = {p.stem: json.loads(p.read_text()) for p in sorted(EXAMPLES.glob("*.json"))}

# ---- hostile values ------------------------------------------------------------------------------------------------
huge_ints = st.sampled_from([10**400, -(10**400), 2**64, 9007199254740993, 10**30, int("1" * 300)])
extreme_floats = st.sampled_from([1e308, -1e308, 1e200, 5e-324, 1e-300, 1e-320, -0.0, 0.0, 1e-9, 1e6, 1e7, 2e6,
                                  math.nextafter(1e6, 2e6), -1e6])
numbers = st.one_of(extreme_floats, huge_ints, st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False))
plausible = st.one_of(st.floats(-10, 10, allow_nan=False), st.sampled_from([1e-6, 1e-3, 0.0, 1e3, 999999.0, -999999.0]))
strings = st.one_of(st.sampled_from(["\ud800", "a\udcffb", "", " x", "x ", "\x00", "\n", "a" * 300, "ground", "crank",
                                     "revolute", "sphere", "halfspace", "implicit"]),
                    st.text(max_size=12))


def vectors(n: int) -> st.SearchStrategy:
    return st.lists(numbers, min_size=n, max_size=n)


scalars = st.one_of(numbers, strings, st.booleans(), st.none())
values = st.one_of(scalars, st.lists(scalars, max_size=5), vectors(3), vectors(4),
                   st.dictionaries(strings, scalars, max_size=3))


# ---- driver expressions from the whitelist grammar -----------------------------------------------------------------
_leaves = st.one_of(st.just("t"), st.sampled_from(sorted(CONSTANTS)), st.integers(0, 100).map(str),
                    st.sampled_from(["0.5", "2", "64", "2**64", "1e300", "1e-300", "0"]),
                    st.floats(0, 1e3, allow_nan=False).map(repr))


def _extend(inner: st.SearchStrategy) -> st.SearchStrategy:
    binop = st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "**"]), inner).map(lambda x: f"({x[0]}){x[1]}({x[2]})")
    unary = inner.map(lambda x: f"-({x})")
    fixed = [f for f, (_, n) in FUNCTIONS.items() if n is not None]
    call = st.tuples(st.sampled_from(fixed), st.lists(inner, min_size=2, max_size=2)).map(
        lambda x: f"{x[0]}({', '.join(x[1][:FUNCTIONS[x[0]][1][0]])})")
    many = st.tuples(st.sampled_from(["min", "max"]), st.lists(inner, min_size=2, max_size=20)).map(
        lambda x: f"{x[0]}({', '.join(x[1])})")
    return st.one_of(binop, unary, call, many)


expressions = st.one_of(
    st.recursive(_leaves, _extend, max_leaves=40),
    # the campaign's shapes: towers, repeated powers, long min/max lists
    st.integers(2, 80).map(lambda n: "**".join(["t"] * n)),
    st.tuples(st.integers(1, 8), st.integers(1, 70)).map(lambda x: "(" * x[0] + "t*2**64" + ")**64" * x[0]),
    st.integers(2, 150).map(lambda n: "max(" + ",".join(f"sin({k}*t)" for k in range(1, n + 1)) + ")"),
    st.integers(2, 40).map(lambda n: "min(" + ",".join(f"t**{k}" for k in range(1, n + 1)) + ")"),
    # the later campaigns' shapes: constant exponents and arguments hidden in function calls, undefined parts
    st.tuples(st.sampled_from(["2", "(-64)", "3", "t", "0.5"]), st.sampled_from(["max", "min", "abs"]),
              st.sampled_from(["2**64", "10**7", "65", "64", "-(2**64)", "1e300"])).map(
        lambda x: f"{x[0]}**{x[1]}({x[2]}" + (")" if x[1] == "abs" else ", 1)")),
    st.tuples(st.sampled_from(sorted(f for f, (_, n) in FUNCTIONS.items() if n == (1,))),
              st.sampled_from(["exp(1e300)", "exp(1000)", "tan(pi/2)", "1/(t-t)", "log(0)", "cosh(exp(690))"])).map(
        lambda x: f"{x[0]}({x[1]})*t"),
)


# ---- mutated documents ---------------------------------------------------------------------------------------------
def _paths(doc, prefix=()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, prefix + (i,))
    return out


def _set(doc, path: tuple, value, delete: bool = False):
    if not path:
        return value
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


@st.composite
def documents(draw) -> str:
    """The text of an example with one to three mutations (replace, delete or duplicate a value; a new driver)."""
    doc = copy.deepcopy(EXAMPLE_DOCS[draw(st.sampled_from(sorted(EXAMPLE_DOCS)))])
    for _ in range(draw(st.integers(1, 3))):
        if not isinstance(doc, dict):  # the whole document was replaced: nothing more to mutate
            break
        paths = _paths(doc)
        leaves = [p for p in paths if p and not isinstance(_get(doc, p), (dict, list))]
        # mostly a single number or string (deep into the loader and the solvers), sometimes a whole subtree
        path = draw(st.sampled_from(leaves if leaves and draw(st.integers(0, 9)) < 8 else paths))
        kind = draw(st.sampled_from(["replace", "replace", "replace", "delete", "duplicate", "driver", "pile"]))
        drivers, bodies = doc.get("drivers"), doc.get("bodies")
        if kind == "driver" and isinstance(drivers, list) and drivers and isinstance(drivers[0], dict):
            drivers[0]["value"] = draw(expressions)
        elif kind == "pile" and isinstance(bodies, list) and bodies and isinstance(bodies[-1], dict):
            b = doc["bodies"][-1]
            doc["bodies"] += [dict(copy.deepcopy(b), name=f"{b.get('name', 'b')}_{i}") for i in range(draw(st.integers(1, 12)))]
        elif kind == "delete" and path:
            doc = _set(doc, path, None, delete=True)
        elif kind == "duplicate" and path and isinstance(_get(doc, path[:-1]), list):
            _get(doc, path[:-1]).append(copy.deepcopy(_get(doc, path)))
        else:
            # mostly a value of the same kind, so the document gets past the type checks into the bounds and the
            # solvers; sometimes anything at all
            old = _get(doc, path)
            if draw(st.integers(0, 9)) == 0 or isinstance(old, (dict, list, type(None))):
                new = draw(values)
            elif isinstance(old, bool):
                new = draw(st.booleans())
            elif isinstance(old, (int, float)):
                new = draw(st.one_of(numbers, plausible))
            else:
                new = draw(strings)
            doc = _set(doc, path, new)
    return json.dumps(doc, ensure_ascii=draw(st.booleans()))


def _get(doc, path: tuple):
    for k in path:
        doc = doc[k]
    return doc


# ---- command-line arguments ----------------------------------------------------------------------------------------
number_args = st.one_of(st.sampled_from(["1e308", "-1", "0", "nan", "inf", "-inf", "1e-320", "5e-324", "0.02", "0.005",
                                         "1e-9", "1e6", "abc", "", "0x10", "1" * 400]),
                        st.floats(0.001, 0.05, allow_nan=False).map(repr))
step_args = st.one_of(st.sampled_from(["-1", "0", "1", "3", "1000001", str(10**30), "2.5", "x"]),
                      st.integers(1, 20).map(str))


@st.composite
def arguments(draw, files: list[str], outputs: list[str]) -> list[str]:
    """One command line: a command, an input, and hostile options (run lengths stay short or are refused)."""
    cmd = draw(st.sampled_from(["analyze", "kinematics", "simulate", "fourbar", "nonsense"]))
    if cmd == "fourbar":
        argv = [cmd, "--lengths", *draw(st.lists(number_args | st.sampled_from(["4", "1", "3.5", "3"]), min_size=0,
                                                 max_size=5))]
        if draw(st.booleans()):
            argv.append("--json")
        return argv
    argv = [cmd, draw(st.sampled_from(files))]
    if cmd == "analyze" and draw(st.booleans()):
        argv.append("--json")
    if cmd == "kinematics":
        argv += ["--steps", draw(step_args)]
        if draw(st.booleans()):
            argv += ["--t-end", draw(number_args)]
        out = draw(st.sampled_from(["", "--json"] + outputs))
        argv += [] if not out else (["--json"] if out == "--json" else ["--csv", out])
    if cmd == "simulate":
        # a short run (two or a few steps), or a length that must be refused before running
        argv += ["--t-end", draw(st.sampled_from(["0.02", "0.01", "0", "1e308", "-1", "nan", "1e6"]))]
        if draw(st.booleans()):
            argv += ["--dt", draw(number_args)]
        if draw(st.booleans()):
            argv += ["--method", draw(st.sampled_from(["implicit", "explicit", "magic"]))]
        out = draw(st.sampled_from([""] + outputs))
        argv += ["--out", out] if out else []
    if draw(st.integers(0, 9)) == 0:
        argv.append(draw(st.sampled_from(["--bogus", "extra", "--t-end", "-"])))
    return argv


__all__ = ["FUZZ_EXAMPLES", "fuzz_settings", "fuzz_timeout", "documents", "expressions", "arguments", "EXAMPLE_DOCS"]
