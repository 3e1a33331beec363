"""Driver expressions of time: a whitelist parser to sympy, symbolic derivatives, compiled numpy functions."""

from __future__ import annotations

import ast
import contextlib
import ctypes
import math
import os
import re
import threading
import unicodedata
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import sympy

from .errors import LinkwrightError
from .validate import MAX_DRIVEN, MAX_EXPRESSION_LENGTH

__all__ = ["DriverExpression", "parse_expression", "check_expression", "budget", "FUNCTIONS", "CONSTANTS"]

T = sympy.Symbol("t", real=True)


class _Extreme(sympy.Function):
    """min(a, b) or max(a, b) as an opaque function: sympy never compares its arguments (Min and Max do, at a cost
    exponential in their number); the derivative picks the branch that is the extreme (the left one at a tie, a
    one-sided derivative, where Min's Heaviside form would average the two)."""

    nargs = 2
    _sign = 1  # +1: min (a wins where a <= b); -1: max (a wins where a >= b)

    @classmethod
    def eval(cls, a, b):  # noqa: D102 - sympy API
        if a.is_number and b.is_number and a.is_comparable and b.is_comparable:
            return a if bool(cls._sign * a <= cls._sign * b) else b
        return None

    def fdiff(self, argindex=1):  # noqa: D102 - sympy API
        a, b = self.args
        left = _Le(a, b) if self._sign > 0 else _Le(b, a)
        return left if argindex == 1 else 1 - left


class _Min2(_Extreme):
    """min(a, b)."""

    _sign = 1


class _Max2(_Extreme):
    """max(a, b)."""

    _sign = -1


class _Abs(sympy.Function):
    """|a| whose derivative is sign(a) whatever sympy knows of a (sympy's Abs of an argument it cannot prove real,
    such as log(t), differentiates into unevaluated re/im derivatives that cannot be compiled)."""

    nargs = 1

    @classmethod
    def eval(cls, a):  # noqa: D102 - sympy API
        return sympy.Abs(a) if a.is_number else None

    def fdiff(self, argindex=1):  # noqa: D102 - sympy API
        return _Sign(self.args[0])


class _Sign(sympy.Function):
    """sign(a): the derivative of |a|; its own derivative is 0 almost everywhere."""

    nargs = 1

    @classmethod
    def eval(cls, a):  # noqa: D102 - sympy API
        return sympy.sign(a) if a.is_number else None

    def fdiff(self, argindex=1):  # noqa: D102 - sympy API
        return sympy.Integer(0)


class _Le(sympy.Function):
    """1 where a <= b, else 0: the branch indicator of min and max (its derivative is 0 almost everywhere)."""

    nargs = 2

    @classmethod
    def eval(cls, a, b):  # noqa: D102 - sympy API
        if a.is_number and b.is_number and a.is_comparable and b.is_comparable:
            return sympy.Integer(1 if bool(a <= b) else 0)
        return None

    def fdiff(self, argindex=1):  # noqa: D102 - sympy API
        return sympy.Integer(0)


# numpy implementations of the opaque functions, for lambdify
_NUMPY = {"_Min2": np.minimum, "_Max2": np.maximum, "_Le": lambda a, b: np.where(a <= b, 1.0, 0.0),
          "_Abs": np.abs, "_Sign": np.sign}


def _fold(fn, args: list):
    """fn over all args as a balanced tree of pairs (depth log2 n, so derivative trees stay small)."""
    while len(args) > 1:
        args = [fn(args[i], args[i + 1]) if i + 1 < len(args) else args[i] for i in range(0, len(args), 2)]
    return args[0]


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
    "abs": (_Abs, (1,)),
    "min": (lambda *a: _fold(_Min2, list(a)), None),
    "max": (lambda *a: _fold(_Max2, list(a)), None),
}
CONSTANTS = {"pi": sympy.pi, "e": sympy.E}

MAX_LENGTH = MAX_EXPRESSION_LENGTH  # characters (2000); a driver is a formula, not a program
MAX_DEPTH = 60  # nesting of the expression tree
MAX_NODES = 500  # size of the expression tree
MAX_EXPONENT = 64  # |constant exponent|: 9**9**9 must not make sympy compute a 370-million-digit number
MAX_CONSTANT = 1e300
MAX_BITS = 2048  # bound on the size of exact integers sympy may build (((t*2**64)**64)**64 would need 262,144 bits)
MAX_DERIVATIVE_SIZE = 20_000  # bound on the tree size of q, dq/dt and d²q/dt² (t**t**...**t doubles per level)
MAX_MINMAX_ARGS = 16  # arguments of one min or max
CHECK_SECONDS = 1.0  # hard budget of check_expression (the GUI's live check runs it on every key press)
COMPILE_SECONDS = 5.0  # hard budget of parse_expression (derivatives and numpy code)
MEMORY_MB = 256  # hard budget of memory growth during either


_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}
_OPNAMES = {ast.BitXor: "'^' (use ** for powers)", ast.FloorDiv: "'//'", ast.Mod: "'%'", ast.MatMult: "'@'"}
# a chain of one family of left-associative operators (a + b - c + ..., a * b / c ...) is one level of nesting, not one
# per operator: its left spine is walked iteratively (_spine), so a 60-term Fourier series is not "nested too deeply"
_FAMILY = {ast.Add: "+", ast.Sub: "+", ast.Mult: "*", ast.Div: "*"}


def _spine(node: ast.BinOp) -> list[ast.BinOp]:
    """The operators of the chain that node ends, innermost (leftmost) first: node and its left operands while they
    are operators of its family."""
    fam = _FAMILY.get(type(node.op))
    out = [node]
    while fam is not None and isinstance(out[-1].left, ast.BinOp) and _FAMILY.get(type(out[-1].left.op)) == fam:
        out.append(out[-1].left)
    return out[::-1]


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
        """Values, velocities and accelerations at `times`; LinkwrightError where not finite or beyond MAX_DRIVEN."""
        q, qd, qdd, _, why = self.evaluate_until(times)
        if why:
            raise LinkwrightError(self.location, why)
        return q, qd, qdd

    def evaluate_until(self, times: np.ndarray | float) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, str]:
        """Values, velocities and accelerations at `times` (ascending), the index of the first time where one of
        them is not a finite real number or beyond MAX_DRIVEN (len(times) when there is none) and why, naming that
        time ('' when none). Entries from that index on are unspecified but finite (0).

        The bound keeps every number the solvers build from a driver (products of rates, squared residuals) far
        from overflow: 1/(1-t) stops where its acceleration 2/(1-t)³ passes 1e9, not at a float overflow."""
        tt = np.atleast_1d(np.asarray(times, dtype=float))
        out, unreal = [], []
        # Poles and logarithms of negative numbers give inf or nan here, with a numpy warning: the non-finite
        # entries are found and reported right below, so the warning would only repeat it.
        with np.errstate(all="ignore"):
            for f in self._funcs:
                try:
                    raw = np.broadcast_to(np.asarray(f(tt)), tt.shape)
                except (TypeError, ValueError, ArithmeticError) as exc:  # a numpy type the expression cannot take
                    raise LinkwrightError(self.location, f"'{self.text}' cannot be evaluated ({exc})") from None
                # sympy keeps sqrt(-1), log(-1), (-8)**(1/3) complex: a coordinate must be real, never its real part
                imag = np.iscomplexobj(raw) and np.asarray(raw.imag != 0)
                unreal.append(imag if imag is not False else np.zeros(tt.shape, dtype=bool))
                out.append(np.where(unreal[-1], np.nan, raw.real).astype(float))
        bad = [~(np.abs(v) <= MAX_DRIVEN) for v in out]  # NaN compares False: caught too
        anybad = bad[0] | bad[1] | bad[2]
        if not anybad.any():
            return out[0], out[1], out[2], len(tt), ""
        k = int(np.argmax(anybad))
        c = next(i for i in range(3) if bad[i][k])
        x = out[c][k]
        name = ("value", "velocity", "acceleration")[c]
        for v in out:
            v[k:] = 0.0
        if np.isfinite(x) and not unreal[c][k] and f"{abs(x):.3g}" == f"{MAX_DRIVEN:.3g}":
            # just beyond the bound, where a run's driver ends (located by bisection): '1e+09, beyond the bound
            # ±1e+09' said nothing; the time to the digits of 'the motion ends near t = ...'
            return out[0], out[1], out[2], k, (f"{name} of '{self.text}' passes the bound ±{MAX_DRIVEN:g} at "
                                               f"t = {float(tt[k]):.9g}")
        what = ("not a real number" if unreal[c][k] else "not finite" if not np.isfinite(x) else
                f"{x:.3g}, beyond the bound ±{MAX_DRIVEN:g}")
        return out[0], out[1], out[2], k, f"{name} of '{self.text}' is {what} at t = {float(tt[k]):g}"


@dataclass(frozen=True)
class _Cost:
    """Upper bounds, from the syntax tree alone, of what sympy will build: tree sizes of q, q' and q'' and the bits
    of the largest exact number; `value` is the float value of a constant subtree (None when it depends on t)."""

    size: int
    d1: int
    d2: int
    bits: int
    value: float | None


def _fold_costs(items: list[_Cost], combine) -> _Cost:
    while len(items) > 1:
        items = [combine(items[i], items[i + 1]) if i + 1 < len(items) else items[i] for i in range(0, len(items), 2)]
    return items[0]


def _minmax_cost(a: _Cost, b: _Cost) -> _Cost:
    # (min a b)' = a' L(a,b) + b' (1 - L(a,b)); L' = 0
    s = a.size + b.size
    return _Cost(s + 1, a.d1 + b.d1 + 2 * s + 6, a.d2 + b.d2 + 2 * s + 6, max(a.bits, b.bits), None)


class _Checker:
    """Walks a Python AST accepting only the whitelist, and bounds the cost of what sympy would build from it."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.nodes = 0

    def fail(self, message: str) -> LinkwrightError:
        return LinkwrightError(self.location, message)

    @staticmethod
    def at(node: ast.AST) -> str:
        """' at column N' of `node` in the text (the parsed tree's columns are the text's)."""
        return f" at column {node.col_offset + 1}"

    def check(self, node: ast.AST) -> _Cost:
        """The cost bounds of `node`, or a located LinkwrightError at the first limit exceeded."""
        c = self.visit(node, 0)
        return self._within(c, max(c.size, c.d1, c.d2))

    def _within(self, c: _Cost, size: int) -> _Cost:
        """c, or a located LinkwrightError when its exact numbers or `size` (a derivative's tree size) exceed the
        bounds."""
        if c.bits > MAX_BITS:
            raise self.fail(f"numbers in the expression grow too large (beyond 2^{MAX_BITS}); use smaller powers")
        if size > MAX_DERIVATIVE_SIZE:
            raise self.fail(f"expression too complex: its derivatives would have more than {MAX_DERIVATIVE_SIZE:,} "
                            "terms (e.g. towers of powers of t, or deeply nested min/max)")
        return c

    def visit(self, node: ast.AST, depth: int) -> _Cost:
        self.nodes += 1
        if depth > MAX_DEPTH:
            raise self.fail(f"expression nested too deeply (limit {MAX_DEPTH} levels)")
        if self.nodes > MAX_NODES:
            raise self.fail(f"expression too long (limit {MAX_NODES} terms)")
        c = self._visit(node, depth)
        return self._within(c, c.d2)  # (early: the tree above can only grow)

    def _visit(self, node: ast.AST, depth: int) -> _Cost:
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise self.fail(f"only numbers are allowed, not {type(v).__name__} {v!r}{self.at(node)}")
            if isinstance(v, int) and v.bit_length() > 1000:  # beyond any float: float(v) would raise
                raise self.fail(f"number of {len(str(v))} digits{self.at(node)} is too large")
            if not math.isfinite(float(v)) or abs(float(v)) > MAX_CONSTANT:
                raise self.fail(f"number {v!r}{self.at(node)} is too large")
            bits = v.bit_length() if isinstance(v, int) else 1  # sympy Floats have a fixed precision
            return _Cost(1, 1, 1, max(bits, 1), float(v))
        if isinstance(node, ast.Name):
            if node.id == "t":
                return _Cost(1, 1, 1, 1, None)
            if node.id in CONSTANTS:
                return _Cost(1, 1, 1, 1, float(CONSTANTS[node.id]))
            if node.id in FUNCTIONS:
                raise self.fail(f"function '{node.id}'{self.at(node)} must be called, e.g. {node.id}(t)")
            raise self.fail(f"unknown name '{node.id}'{self.at(node)} (allowed: t, pi, e and functions "
                            f"{', '.join(FUNCTIONS)})")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            a = self.visit(node.operand, depth + 1)
            v = None if a.value is None else (-a.value if isinstance(node.op, ast.USub) else a.value)
            return _Cost(a.size + 1, a.d1 + 1, a.d2 + 1, a.bits, v)
        if isinstance(node, ast.BinOp):
            return self._binop(node, depth)
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise self.fail("only the listed functions may be called (no attribute access)")
            name = node.func.id
            if name not in FUNCTIONS:
                raise self.fail(f"unknown function '{name}'{self.at(node)} (allowed: {', '.join(FUNCTIONS)})")
            if node.keywords:
                raise self.fail(f"'{name}'{self.at(node)} takes no keyword arguments")
            _, counts = FUNCTIONS[name]
            n = len(node.args)
            if (counts is None and n < 2) or (counts is not None and n not in counts):
                want = "two or more arguments" if counts is None else f"{counts[0]} argument" + ("s" if counts[0] > 1 else "")
                raise self.fail(f"'{name}'{self.at(node)} takes {want}, got {n}")
            if counts is None and n > MAX_MINMAX_ARGS:
                raise self.fail(f"'{name}'{self.at(node)} takes at most {MAX_MINMAX_ARGS} arguments, got {n}")
            if any(isinstance(a, ast.Starred) for a in node.args):
                raise self.fail(f"'{name}'{self.at(node)}: starred arguments are not allowed")
            args = [self.visit(a, depth + 1) for a in node.args]
            value = self._call_value(name, args)
            if counts is None:
                c = _fold_costs(args, _minmax_cost)
                return _Cost(c.size, c.d1, c.d2, c.bits, value)
            if name == "atan2":
                a, b = args
                s = a.size + b.size
                return _Cost(s + 1, 3 * s + a.d1 + b.d1 + 10, 9 * s + 3 * (a.d1 + b.d1) + a.d2 + b.d2 + 40,
                             max(a.bits, b.bits), value)
            (a,) = args
            # f(a)' = g(a) a' with g at most about twice a's size (1/sqrt(1 - a**2)); f'' likewise once more
            return _Cost(a.size + 1, 2 * a.size + a.d1 + 9, 6 * a.size + 3 * a.d1 + a.d2 + 30, a.bits, value)
        if isinstance(node, ast.Attribute):
            raise self.fail("attribute access is not allowed")
        if isinstance(node, ast.Lambda):
            raise self.fail("lambda is not allowed")
        if isinstance(node, ast.Compare):
            raise self.fail("comparisons are not allowed")
        raise self.fail(f"{type(node).__name__} is not allowed in an expression")

    def _call_value(self, name: str, args: list[_Cost]) -> float | None:
        """The float value of a function of constants, refused when it is beyond MAX_CONSTANT. The value bounds
        what sympy does with it: as an exponent (2**max(1, 2**64) is refused by MAX_EXPONENT, where sympy would
        compute 2**(2**64) in C, out of the budget's reach) and as an argument (sympy evaluates functions of numbers
        in arbitrary precision: tanh(exp(1e300)) made mpmath overflow)."""
        if any(a.value is None for a in args):
            return None
        try:
            v = _MATH[name](*(a.value for a in args))
        except (ValueError, ZeroDivisionError):  # outside the domain in floats: sympy, exactly, reduces it to an
            return None  # undefined value (_defined) or a complex one (_real), or finds it defined (acos(2*cos(pi/3)))
        except OverflowError:
            raise self.fail(f"constant part of the expression is too large ({name} of {_fmt(args)})") from None
        if not math.isfinite(v) or abs(v) > MAX_CONSTANT:
            raise self.fail(f"constant part of the expression is too large ({name} of {_fmt(args)})")
        return float(v)

    def _binop(self, node: ast.BinOp, depth: int) -> _Cost:
        """The cost of a chain of operators (_spine: one level deep however long), each operator's as _operator's."""
        chain = _spine(node)
        self.nodes += len(chain) - 1  # (visit counted node itself)
        if self.nodes > MAX_NODES:
            raise self.fail(f"expression too long (limit {MAX_NODES} terms)")
        a = self.visit(chain[0].left, depth + 1)
        for op_node in chain:
            a = self._operator(op_node, a, depth)
            self._within(a, a.d2)  # (each link as visit bounds a node)
        return a

    def _operator(self, node: ast.BinOp, a: _Cost, depth: int) -> _Cost:
        """The cost of one operator whose left operand costs a."""
        op = type(node.op)
        if op not in _BINOPS:
            raise self.fail(f"operator {_OPNAMES.get(op, op.__name__)} is not allowed")
        b = self.visit(node.right, depth + 1)
        av, bv = a.value, b.value
        if op is ast.Pow and bv is not None and abs(bv) > MAX_EXPONENT:
            size = " in size" if bv < 0 else ""  # (-1074 is not large: its size is)
            raise self.fail(f"exponent {bv:g} is too large{size} (limit {MAX_EXPONENT})")
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
        s = a.size + b.size + 1
        if op in (ast.Add, ast.Sub):
            return _Cost(s, a.d1 + b.d1 + 1, a.d2 + b.d2 + 1, max(a.bits, b.bits) + 1, value)
        if op is ast.Mult:
            return _Cost(s, a.d1 + b.size + a.size + b.d1 + 3, a.d2 + b.size + a.d1 + b.d1 + a.size + b.d2 + 7,
                         a.bits + b.bits, value)
        if op is ast.Div:
            return _Cost(s, a.d1 + 2 * b.size + a.size + b.d1 + 5,
                         2 * (a.d1 + b.d1) + a.d2 + b.d2 + 2 * a.size + 5 * b.size + 12, a.bits + b.bits, value)
        if bv is not None:  # a**n: n a**(n-1) a'; exact powers of exact numbers grow by a factor |n|
            return _Cost(s, a.size + a.d1 + 5, 2 * a.size + 2 * a.d1 + a.d2 + 12,
                         a.bits * max(1, math.ceil(abs(bv))), value)
        # a**b = exp(b log a): (a**b)' = a**b (b' log a + b a'/a)
        d1 = 3 * a.size + 2 * b.size + a.d1 + b.d1 + 8
        g2 = b.d2 + 4 * a.size + 2 * b.d1 + 3 * a.d1 + 2 * b.size + a.d2 + 15
        return _Cost(s, d1, d1 + (b.d1 + 2 * a.size + b.size + a.d1 + 5) + s + g2 + 4, a.bits + b.bits, value)


# float versions of FUNCTIONS, for the values of constant subtrees
_MATH: dict[str, Callable[..., float]] = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos, "atan": math.atan,
    "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh, "exp": math.exp, "log": math.log,
    "sqrt": math.sqrt, "abs": abs, "min": min, "max": max,
}
assert set(_MATH) == set(FUNCTIONS)


def _fmt(args: list[_Cost]) -> str:
    return ", ".join(f"{a.value:.6g}" for a in args)


def _build(node: ast.AST, location: str, text: str) -> sympy.Expr:
    """The sympy expression of a syntax tree that _Checker accepted; a located LinkwrightError as soon as a part is
    undefined (sympy would go on with it: atan(tan(pi/2)) becomes atan(zoo), an AccumulationBounds that its code
    printer and cse cannot handle)."""
    if isinstance(node, ast.Constant):
        v = node.value
        return sympy.Integer(v) if isinstance(v, int) else sympy.Float(v)
    if isinstance(node, ast.Name):
        return T if node.id == "t" else CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp):
        a = _build(node.operand, location, text)
        out = -a if isinstance(node.op, ast.USub) else a
    elif isinstance(node, ast.BinOp):
        chain = _spine(node)  # (a chain of one family iteratively, as _Checker walked it)
        out = _build(chain[0].left, location, text)
        for op_node in chain[:-1]:
            out = _BINOPS[type(op_node.op)](out, _build(op_node.right, location, text))
            _check_part(out, op_node, location, text)
        out = _BINOPS[type(node.op)](out, _build(node.right, location, text))
    else:
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        out = FUNCTIONS[node.func.id][0](*(_build(a, location, text) for a in node.args))
    _check_part(out, node, location, text)
    return out


def _check_part(out: sympy.Expr, node: ast.AST, location: str, text: str) -> None:
    """Refuse a part of the text (node, `out` as built) that is undefined (_defined), or that has no t and sympy's
    exact arithmetic finds is not a real number: asin(2), log(-1) (I*pi), sqrt(-1) (I), where numpy would give nan or
    a complex number at every time (at its column)."""
    _defined(out, location, text, "")
    if out.is_Number or out.free_symbols or out.is_extended_real is not False:
        return
    part = text[node.col_offset:node.end_col_offset]
    raise LinkwrightError(location, f"{part} at column {node.col_offset + 1} is not a real number ({_DOMAINS})")


class _BudgetExceeded(BaseException):
    """Raised inside a compile that ran out of its time or memory (a BaseException: sympy's `except Exception`
    clauses must not swallow it)."""


def _rss_bytes() -> int:
    """Resident memory of the process (Linux /proc; 0 where unavailable, which disables the memory check)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


try:
    _PAGE = os.sysconf("SC_PAGE_SIZE")
except (AttributeError, ValueError, OSError):  # pragma: no cover - not Linux
    _PAGE = 4096


class budget:
    """A hard time and memory budget for the body of a `with` block, enforced in the core: a watchdog thread
    interrupts the body (between two Python bytecodes of sympy's work) when it runs longer than `seconds` or the
    process grows by more than `megabytes`, and the block ends in a located LinkwrightError."""

    def __init__(self, seconds: float, location: str, text: str, megabytes: float = MEMORY_MB) -> None:
        self.seconds, self.location, self.text, self.megabytes = seconds, location, text, megabytes
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._done = False
        self._why = ""

    def _interrupt(self) -> None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._tid), ctypes.py_object(_BudgetExceeded))

    def _watch(self) -> None:
        start, rss0 = time.monotonic(), _rss_bytes()
        limit = rss0 + self.megabytes * 2**20
        while not self._stop.wait(0.01):
            why = ("time" if time.monotonic() - start > self.seconds else
                   "memory" if rss0 and _rss_bytes() > limit else "")
            if why:
                with self._lock:
                    if self._done:
                        return
                    self._why = why
                    self._interrupt()
                self._stop.wait(0.05)  # then again, until the body has ended (sympy may be in a `finally`)

    def __enter__(self) -> "budget":
        self._tid = threading.get_ident()
        self._watchdog = threading.Thread(target=self._watch, name="expression-budget", daemon=True)
        self._watchdog.start()
        return self

    def _finish(self) -> None:
        while True:  # the interruption may land here too: retry until the watchdog is told to stand down
            try:
                with self._lock:
                    self._done = True
                    if self._why:  # one sent but not delivered yet must not hit the caller later
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._tid), None)
                break
            except _BudgetExceeded:
                continue
        self._stop.set()
        self._watchdog.join(1.0)  # no thread outlives the compile

    def __exit__(self, kind, exc, tb) -> bool:
        try:
            self._finish()
        except _BudgetExceeded:  # pragma: no cover - delivered between the retry loop and here
            self._finish()
        if self._why and (kind is None or issubclass(kind, _BudgetExceeded)):
            what = f"more than {self.seconds:g} s" if self._why == "time" else f"more than {self.megabytes:g} MB of memory"
            raise LinkwrightError(self.location, f"'{_short(self.text)}' is too costly to compile ({what}); simplify it")
        return False


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _floats_for_big_numbers(expr: sympy.Expr) -> sympy.Expr:
    """Exact numbers beyond 2**53 as floats: numpy cannot take a Python int beyond int64 (arccos(2**64) fails)."""
    big = {r: sympy.Float(r) for r in expr.atoms(sympy.Rational) if abs(r.p) > 2**53 or r.q > 2**53}
    return expr.xreplace(big) if big else expr


_UNDEFINED = (sympy.zoo, sympy.nan, sympy.oo, -sympy.oo, sympy.AccumBounds)


def _defined(expr: sympy.Expr, location: str, text: str, what: str) -> None:
    """Refuse an expression that sympy reduced to an undefined value (tan(pi/2), 1/(t-t), log(0*t))."""
    if expr.has(sympy.Derivative):  # a function sympy could not differentiate (kept as a formal derivative)
        raise LinkwrightError(location, f"{what}'{_short(text)}' cannot be differentiated symbolically")
    if expr.has(*_UNDEFINED):
        raise LinkwrightError(location, f"{what}'{_short(text)}' is undefined (a division by zero or a function "
                                        "at a pole, such as tan(pi/2) or log(0))")


# ---- the lexical front: the documented characters and tokens only --------------------------------------------------
# Python's tokenizer, which ast.parse runs, accepts more than the grammar: a '#' comment (the rest of the text
# dropped), a backslash continuation, any Unicode letter in a name (NFKC-normalised: 'ｐｉ' is pi), numbers as 0x10,
# 0o7, 0b1 and 1_000. The front reads the text first and lets only the grammar's tokens through: spaces, decimal
# numbers, ASCII names, + - * / ** ( ) and the comma; anything else is refused at its column (1-based, in the text
# as given).
_NUMBER = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPACES = " \t"
_OPERATORS = "+-*/(),"
_ALLOWED = "only numbers, t, pi, e, the listed functions, + - * / ** and parentheses are allowed"
_WHY = {
    "#": "comments are not part of an expression",
    "\\": "an expression is one line, without line continuations",
    "^": "use ** for powers",
    "'": f"strings are not part of an expression: {_ALLOWED}",
    '"': f"strings are not part of an expression: {_ALLOWED}",
    ".": "attribute access is not part of an expression",
    "=": "comparisons, assignments and keyword arguments are not part of an expression",
    "<": "comparisons are not part of an expression",
    ">": "comparisons are not part of an expression",
    "!": "comparisons are not part of an expression",
    "[": "only parentheses group", "]": "only parentheses group",
    "{": "only parentheses group", "}": "only parentheses group",
}


def _quoted(ch: str) -> str:
    return f'"{ch}"' if ch == "'" else f"'{ch}'"


def _word_char(ch: str) -> bool:
    """A character that would continue a number or a name (what may not directly follow a number)."""
    return ch.isascii() and (ch.isalnum() or ch in "_.")


def _lexical_check(text: str, location: str) -> None:
    """Refuse the first character of `text` that is not part of a token of the documented grammar, at its column."""

    def refuse(what: str, i: int) -> LinkwrightError:
        return LinkwrightError(location, f"{what} at column {i + 1}")

    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _SPACES:
            i += 1
        elif ch in _OPERATORS:
            if text.startswith("//", i):
                raise refuse("'//' is not allowed (use / for division)", i)
            if ch == "," and text[i + 1:].lstrip(_SPACES).startswith(")"):  # (Python reads sin(t,) as sin(t))
                raise refuse("',' with no argument after it", i)
            i += 1
        elif (m := _NAME.match(text, i)) is not None:
            i = m.end()
        elif (m := _NUMBER.match(text, i)) is not None:
            j = m.end()
            if j < n and _word_char(text[j]):  # 2t, 2pi, 0x10, 0o7, 1_000, 1e, 1.2.3, 1j
                k = j
                while k < n and _word_char(text[k]):
                    k += 1
                tail = text[j:k]
                product = tail == "t" or tail == "pi" or tail in FUNCTIONS  # (2e: an exponent left out, more likely)
                hint = f"; write {m.group()}*{tail} for a product" if product else ""
                raise refuse(f"'{text[i:k]}' is not a number (numbers are decimal, such as 2, 0.5 or 1e-3{hint})", j)
            i = j
        elif ch in "\n\r":
            raise refuse("a line break is not allowed (an expression is one line)", i)
        elif not ch.isascii():  # (a full-width 'ｐｉ' would be read as pi, a full-width digit is refused)
            code = f"U+{ord(ch):04X}" + (f" {unicodedata.name(ch)}" if unicodedata.name(ch, "") else "")
            shown = f"'{ch}' ({code})" if ch.isprintable() and not ch.isspace() else f"the character {code}"
            raise refuse(f"{shown} is not allowed: an expression is written in ASCII letters, digits and signs", i)
        elif not ch.isprintable():
            raise refuse(f"the control character U+{ord(ch):04X} is not allowed", i)
        elif ch in _WHY:
            raise refuse(f"{_quoted(ch)} is not allowed ({_WHY[ch]})", i)
        else:
            raise refuse(f"{_quoted(ch)} is not allowed ({_ALLOWED})", i)


_DOMAINS = "asin and acos are real from -1 to 1, log above 0, sqrt from 0 on"


def _constant_parts(sym: sympy.Expr, location: str, text: str) -> None:
    """Refuse an expression with a part without t whose value is not a finite real number: asin(2), log(-1) (sympy's
    I*pi), sqrt(-1) (I), asin(2) + t, log(-1)*t. Such a part has that value at every time, so the expression is
    undefined at every time (log(-1)*t is real at t = 0 alone). The parts are those of the expression as built (what
    a run evaluates: sqrt(-1)**2 is -1 there). sympy's exact arithmetic decides where it can (asin(2) is not real);
    where it cannot, the part's value is computed as a run computes it, in numpy floats, once."""
    stack = [sym]
    while stack:
        e = stack.pop()
        if e.free_symbols:
            stack.extend(reversed(e.args))  # (the leftmost part is reported first)
            continue
        if e.is_Number:  # a number sympy computed (_defined refused nan and the infinities)
            continue
        real = e.is_extended_real
        if real is True:
            continue
        what = "not a real number"
        if real is None:
            with np.errstate(all="ignore"):
                value = np.asarray(sympy.lambdify([], _floats_for_big_numbers(e), modules=[_NUMPY, "numpy"])())
            if np.iscomplexobj(value) and value.imag != 0:
                pass
            elif np.isfinite(value.real):
                continue
            else:
                what = "undefined"
        shown = "I = sqrt(-1)" if e == sympy.I else _short(str(e))
        part = "" if e == sym else f": its part {shown} (without t) is {'not real' if what[0] == 'n' else what}"
        raise LinkwrightError(location, f"'{_short(text)}' is {what}{part} ({_DOMAINS})")


def _syntax_tree(text: str, location: str) -> ast.AST:
    if not isinstance(text, str):
        raise LinkwrightError(location, f"must be a string expression of t, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise LinkwrightError(location, f"expression too long ({len(text)} characters, limit {MAX_LENGTH})")
    _lexical_check(text, location)
    if not text.strip():
        raise LinkwrightError(location, "empty expression")
    # Cheap pre-check so pathological nesting never reaches the recursive parser.
    depth = best = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        best = max(best, depth)
    if best > MAX_DEPTH:
        raise LinkwrightError(location, f"expression nested too deeply (limit {MAX_DEPTH} levels)")
    body = text.lstrip()
    lead = len(text) - len(body)  # (columns count in the text as given, not in the text without its indent)
    try:
        tree = ast.parse(body.rstrip(), mode="eval").body
        for n in ast.walk(tree):  # (one line of ASCII: the offsets are columns, now in the text as given)
            if isinstance(n, ast.expr):
                n.col_offset += lead
                n.end_col_offset += lead
        return tree
    except SyntaxError as exc:  # (one line of ASCII here: Python's offset is the column in it, 0 at its end)
        col = exc.offset + lead if exc.offset else len(text.rstrip()) + 1
        if exc.offset and "never closed" in str(exc.msg):
            raise LinkwrightError(location, f"'(' at column {col} is never closed in '{text}'") from None
        if exc.offset and "unmatched" in str(exc.msg):
            raise LinkwrightError(location, f"')' at column {col} has no matching '(' in '{text}'") from None
        where = f"column {col}" if exc.offset else f"column {col} (the end: something is missing)"
        raise LinkwrightError(location, f"syntax error at {where} in '{text}'") from None
    except (RecursionError, MemoryError, ValueError):
        raise LinkwrightError(location, "expression cannot be parsed (too complex)") from None


def _almost_everywhere(expr: sympy.Expr) -> sympy.Expr:
    """Drop Dirac impulses from derivatives of kinks (abs, min, max): they vanish except at isolated instants."""
    return expr.replace(sympy.DiracDelta, lambda *args: sympy.Integer(0))


@contextlib.contextmanager
def _sympy_errors(location: str, text: str) -> Iterator[None]:
    """An error sympy raises on an expression the whitelist accepted becomes a located message (the campaign found
    none left after _build's checks; this keeps a new one from becoming a traceback)."""
    try:
        yield
    except (ValueError, TypeError, ArithmeticError, NotImplementedError, RecursionError) as exc:
        raise LinkwrightError(location, f"'{_short(text)}' cannot be handled symbolically ({type(exc).__name__}: "
                                        f"{str(exc)[:80]})") from None


def check_expression(text: str, location: str, *, seconds: float | None = None) -> None:
    """Raise a located LinkwrightError unless `text` is an allowed expression of t with a defined value.

    Cheap and bounded (the GUI checks every key press): the syntax tree's costs are bounded before sympy builds
    anything, and building the value runs under a hard budget of CHECK_SECONDS and MEMORY_MB."""
    tree = _syntax_tree(text, location)
    _Checker(location).check(tree)
    with budget(CHECK_SECONDS if seconds is None else seconds, location, text), _sympy_errors(location, text):
        _constant_parts(_build(tree, location, text), location, text)


def parse_expression(text: str, location: str, *, seconds: float | None = None) -> DriverExpression:
    """Parse a driver expression of t into sympy, differentiate it twice and compile it to numpy (bounded cost:
    the syntax tree's limits first, then a hard budget of `seconds` (COMPILE_SECONDS) and MEMORY_MB)."""
    tree = _syntax_tree(text, location)
    _Checker(location).check(tree)
    with budget(COMPILE_SECONDS if seconds is None else seconds, location, text), _sympy_errors(location, text):
        sym = _build(tree, location, text)
        _constant_parts(sym, location, text)
        d1 = _almost_everywhere(sympy.diff(sym, T))
        _defined(d1, location, text, "the velocity of ")
        d2 = _almost_everywhere(sympy.diff(d1, T))
        _defined(d2, location, text, "the acceleration of ")
        # lambdify generates code from the sympy tree we built from the whitelist, never from the user's string;
        # cse shares the subtrees min/max repeat.
        funcs = tuple(sympy.lambdify(T, _floats_for_big_numbers(e), modules=[_NUMPY, "numpy"], cse=True)
                      for e in (sym, d1, d2))
    return DriverExpression(text, location, sym, d1, d2, funcs)
