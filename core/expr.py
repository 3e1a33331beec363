"""Driver expressions of time: a whitelist parser to sympy, symbolic derivatives, compiled numpy functions."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import sympy

from .errors import LinkwrightError

__all__ = ["DriverExpression", "parse_expression", "check_expression", "FUNCTIONS", "CONSTANTS"]

T = sympy.Symbol("t", real=True)

# name -> (sympy function, allowed argument counts; None = two or more)
FUNCTIONS: dict[str, tuple[Callable, tuple[int, ...] | None]] = {
    "sin": (sympy.sin, (1,)),
    "cos": (sympy.cos, (1,)),
    "tan": (sympy.tan, (1,)),
    "asin": (sympy.asin, (1,)),
    "acos": (sympy.acos, (1,)),
    "atan": (sympy.atan, (1,)),
    "atan2": (sympy.atan2, (2,)),
    "sinh": (sympy.sinh, (1,)),
    "cosh": (sympy.cosh, (1,)),
    "tanh": (sympy.tanh, (1,)),
    "exp": (sympy.exp, (1,)),
    "log": (sympy.log, (1,)),
    "sqrt": (sympy.sqrt, (1,)),
    "abs": (sympy.Abs, (1,)),
    "min": (sympy.Min, None),
    "max": (sympy.Max, None),
}
CONSTANTS = {"pi": sympy.pi, "e": sympy.E}

MAX_LENGTH = 2000  # characters; a driver is a formula, not a program
MAX_DEPTH = 60  # nesting of the expression tree
MAX_NODES = 500  # size of the expression tree
MAX_EXPONENT = 64  # |constant exponent|: 9**9**9 must not make sympy compute a 370-million-digit number
MAX_CONSTANT = 1e300

_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}
_OPNAMES = {ast.BitXor: "'^' (use ** for powers)", ast.FloorDiv: "'//'", ast.Mod: "'%'", ast.MatMult: "'@'"}


@dataclass(frozen=True)
class DriverExpression:
    """A parsed driver value q(t) with its first and second time derivatives."""

    text: str  # what the user wrote
    location: str  # where it came from, for error messages
    sym: sympy.Expr  # q(t)
    d1: sympy.Expr  # dq/dt
    d2: sympy.Expr  # d²q/dt²
    _funcs: tuple = field(repr=False, compare=False, default=())

    def evaluate(self, times: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Values, velocities and accelerations at `times`; LinkwrightError where not finite."""
        tt = np.atleast_1d(np.asarray(times, dtype=float))
        out, unreal = [], []
        with np.errstate(all="ignore"):
            for f in self._funcs:
                raw = np.broadcast_to(np.asarray(f(tt)), tt.shape)
                # sympy keeps sqrt(-1), log(-1), (-8)**(1/3) complex: a coordinate must be real, never its real part
                imag = np.iscomplexobj(raw) and np.asarray(raw.imag != 0)
                unreal.append(imag if imag is not False else np.zeros(tt.shape, dtype=bool))
                out.append(np.where(unreal[-1], np.nan, raw.real).astype(float))
        for name, v, im in zip(("value", "velocity", "acceleration"), out, unreal):
            bad = ~np.isfinite(v)
            if bad.any():
                k = int(np.argmax(bad))
                what = "not a real number" if im[k] else "not finite"
                raise LinkwrightError(self.location, f"{name} of '{self.text}' is {what} at t = {float(tt[k]):g}")
        return out[0], out[1], out[2]


class _Converter:
    """Walks a Python AST, accepting only the whitelist, and builds the sympy expression."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.nodes = 0

    def fail(self, message: str) -> LinkwrightError:
        return LinkwrightError(self.location, message)

    def convert(self, node: ast.AST, depth: int = 0) -> tuple[sympy.Expr, float | None]:
        """Sympy expression of `node` and its float value when it is constant (None otherwise)."""
        self.nodes += 1
        if depth > MAX_DEPTH:
            raise self.fail(f"expression nested too deeply (limit {MAX_DEPTH} levels)")
        if self.nodes > MAX_NODES:
            raise self.fail(f"expression too long (limit {MAX_NODES} terms)")
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise self.fail(f"only numbers are allowed, not {type(v).__name__} {v!r}")
            if not math.isfinite(float(v)) or abs(float(v)) > MAX_CONSTANT:
                raise self.fail(f"number {v!r} is too large")
            return (sympy.Integer(v) if isinstance(v, int) else sympy.Float(v)), float(v)
        if isinstance(node, ast.Name):
            if node.id == "t":
                return T, None
            if node.id in CONSTANTS:
                return CONSTANTS[node.id], float(CONSTANTS[node.id])
            if node.id in FUNCTIONS:
                raise self.fail(f"function '{node.id}' must be called, e.g. {node.id}(t)")
            raise self.fail(f"unknown name '{node.id}' (allowed: t, pi, e and functions {', '.join(FUNCTIONS)})")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            a, av = self.convert(node.operand, depth + 1)
            if isinstance(node.op, ast.USub):
                return -a, (None if av is None else -av)
            return a, av
        if isinstance(node, ast.BinOp):
            op = type(node.op)
            if op not in _BINOPS:
                raise self.fail(f"operator {_OPNAMES.get(op, op.__name__)} is not allowed")
            a, av = self.convert(node.left, depth + 1)
            b, bv = self.convert(node.right, depth + 1)
            if op is ast.Pow and bv is not None and abs(bv) > MAX_EXPONENT:
                raise self.fail(f"exponent {bv:g} is too large (limit {MAX_EXPONENT})")
            value = None
            if av is not None and bv is not None:
                try:
                    raw = _BINOPS[op](av, bv)
                    if isinstance(raw, complex):  # e.g. (-8)**(1/3) in floating point
                        raise self.fail("constant part of the expression is not a real number")
                    value = float(raw)
                except ZeroDivisionError:
                    raise self.fail("division by zero") from None
                except (OverflowError, ValueError):
                    raise self.fail("constant part of the expression is too large or undefined") from None
                if not math.isfinite(value) or abs(value) > MAX_CONSTANT:
                    raise self.fail("constant part of the expression is too large or undefined")
            if op is ast.Div and bv == 0.0:
                raise self.fail("division by zero")
            return _BINOPS[op](a, b), value
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise self.fail("only the listed functions may be called (no attribute access)")
            name = node.func.id
            if name not in FUNCTIONS:
                raise self.fail(f"unknown function '{name}' (allowed: {', '.join(FUNCTIONS)})")
            if node.keywords:
                raise self.fail(f"'{name}' takes no keyword arguments")
            fn, counts = FUNCTIONS[name]
            n = len(node.args)
            if (counts is None and n < 2) or (counts is not None and n not in counts):
                want = "two or more arguments" if counts is None else f"{counts[0]} argument" + ("s" if counts[0] > 1 else "")
                raise self.fail(f"'{name}' takes {want}, got {n}")
            if any(isinstance(a, ast.Starred) for a in node.args):
                raise self.fail(f"'{name}': starred arguments are not allowed")
            args = [self.convert(a, depth + 1)[0] for a in node.args]
            return fn(*args), None
        if isinstance(node, ast.Attribute):
            raise self.fail("attribute access is not allowed")
        if isinstance(node, ast.Lambda):
            raise self.fail("lambda is not allowed")
        if isinstance(node, ast.Compare):
            raise self.fail("comparisons are not allowed")
        raise self.fail(f"{type(node).__name__} is not allowed in an expression")


def _syntax_tree(text: str, location: str) -> ast.AST:
    if not isinstance(text, str):
        raise LinkwrightError(location, f"must be a string expression of t, got {type(text).__name__}")
    if not text.strip():
        raise LinkwrightError(location, "empty expression")
    if len(text) > MAX_LENGTH:
        raise LinkwrightError(location, f"expression too long ({len(text)} characters, limit {MAX_LENGTH})")
    # Cheap pre-check so pathological nesting never reaches the recursive parser.
    depth = best = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        best = max(best, depth)
    if best > MAX_DEPTH:
        raise LinkwrightError(location, f"expression nested too deeply (limit {MAX_DEPTH} levels)")
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        col = f" at column {exc.offset}" if exc.offset else ""
        raise LinkwrightError(location, f"syntax error{col} in '{text}'") from None
    except (RecursionError, MemoryError, ValueError):
        raise LinkwrightError(location, "expression cannot be parsed (too complex)") from None


def _almost_everywhere(expr: sympy.Expr) -> sympy.Expr:
    """Drop Dirac impulses from derivatives of kinks (abs, min, max): they vanish except at isolated instants."""
    return expr.replace(sympy.DiracDelta, lambda *args: sympy.Integer(0))


def check_expression(text: str, location: str) -> None:
    """Raise a located LinkwrightError unless `text` is an allowed expression of t (no sympy work)."""
    _Converter(location).convert(_syntax_tree(text, location))


def parse_expression(text: str, location: str) -> DriverExpression:
    """Parse a driver expression of t into sympy, differentiate it twice and compile it to numpy."""
    sym, _ = _Converter(location).convert(_syntax_tree(text, location))
    d1 = _almost_everywhere(sympy.diff(sym, T))
    d2 = _almost_everywhere(sympy.diff(d1, T))
    # lambdify generates code from the sympy tree we built from the whitelist, never from the user's string.
    funcs = tuple(sympy.lambdify(T, e, modules="numpy") for e in (sym, d1, d2))
    return DriverExpression(text, location, sym, d1, d2, funcs)
