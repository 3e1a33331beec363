"""Driver expressions: the whitelist parser, symbolic derivatives, and the safety cases."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import sympy

from core.errors import LinkwrightError
from core.expr import check_expression, parse_expression


def test_derivatives_of_a_harmonic_driver():
    e = parse_expression("0.5*sin(2*pi*t) + t**2", "drivers[0].value")
    t = np.linspace(0, 1, 7)
    q, qd, qdd = e.evaluate(t)
    w = 2 * math.pi
    # d/dt (0.5 sin wt + t²) = 0.5 w cos wt + 2t; second derivative -0.5 w² sin wt + 2.
    assert np.allclose(q, 0.5 * np.sin(w * t) + t**2, atol=1e-14)
    assert np.allclose(qd, 0.5 * w * np.cos(w * t) + 2 * t, atol=1e-12)
    assert np.allclose(qdd, -0.5 * w**2 * np.sin(w * t) + 2, atol=1e-11)
    assert e.d1 == sympy.diff(e.sym, sympy.Symbol("t", real=True))


def test_constant_driver_broadcasts():
    q, qd, qdd = parse_expression("pi/4", "x").evaluate(np.array([0.0, 1.0, 2.0]))
    assert q.shape == (3,) and np.allclose(q, math.pi / 4) and not qd.any() and not qdd.any()


def test_every_whitelisted_function_parses_and_evaluates():
    text = "sin(t)+cos(t)+tan(t)+asin(t)+acos(t)+atan(t)+atan2(t,1)+sinh(t)+cosh(t)+tanh(t)+exp(t)+log(1+t)+sqrt(1+t)+abs(t-1)+min(t,1,2)+max(t,e)"
    q, qd, _ = parse_expression(text, "x").evaluate(np.array([0.25]))
    t = 0.25
    ref = (math.sin(t) + math.cos(t) + math.tan(t) + math.asin(t) + math.acos(t) + math.atan(t) + math.atan2(t, 1) + math.sinh(t)
           + math.cosh(t) + math.tanh(t) + math.exp(t) + math.log(1 + t) + math.sqrt(1 + t) + abs(t - 1) + min(t, 1, 2) + max(t, math.e))
    assert q[0] == pytest.approx(ref, rel=1e-14)


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("omega*t", "unknown name 'omega'"),
        ("t.real", "attribute access"),
        ("__import__('os').system('echo hi')", "strings are not part of an expression"),
        ("__import__(t)", "unknown function '__import__'"),
        ("sin(t)(t)", "only the listed functions"),
        ("(lambda: 1)()", "':' is not allowed"),
        ("lambda t: t", "':' is not allowed"),
        ("9**9**9", "exponent"),
        ("2**1000000", "exponent"),
        ("sin", "must be called"),
        ("sin(t, 1)", "takes 1 argument"),
        ("min(t)", "two or more"),
        ("'abc'", "only numbers"),
        ("t > 1", "comparisons"),
        ("t ^ 2", "'^'"),
        ("[t]", "'[' is not allowed"),
        ("1/0", "division by zero"),
        ("sin(x=t)", "keyword"),
        ("2*", "syntax error"),
        ("", "empty"),
        ("True", "only numbers"),
        ("1e400", "too large"),
        ("(-8)**(1/3)", "not a real number"),
    ],
)
def test_rejected_expressions_give_a_located_message(text, fragment):
    with pytest.raises(LinkwrightError) as info:
        parse_expression(text, "drivers[0].value")
    assert info.value.location == "drivers[0].value"
    assert fragment in info.value.message


@pytest.mark.parametrize(
    "text,message",
    [
        # Python's tokenizer, which ast.parse runs, dropped a comment, joined lines and read full-width letters as
        # ASCII (NFKC): all three ran as 2*pi*t or 2*pi*t + sin(t). A newline was "syntax error at column 1".
        ("2*pi*t # + 100*t", "'#' is not allowed (comments are not part of an expression) at column 8"),
        ("2*pi*t \\\n + 0", "'\\' is not allowed (an expression is one line, without line continuations) at column 8"),
        ("2*pi*t\n+ 1", "a line break is not allowed (an expression is one line) at column 7"),
        ("2*pi*t\r\n", "a line break is not allowed (an expression is one line) at column 7"),
        ("2*\uff50\uff49*\uff54 + \uff53\uff49\uff4e(\uff54)",
         "'\uff50' (U+FF50 FULLWIDTH LATIN SMALL LETTER P) is not allowed: an expression is written in ASCII letters, "
         "digits and signs at column 3"),
        ("\uff12*t", "'\uff12' (U+FF12 FULLWIDTH DIGIT TWO) is not allowed: an expression is written in ASCII letters, "
                     "digits and signs at column 1"),
        ("2*\u03c0*t", "'\u03c0' (U+03C0 GREEK SMALL LETTER PI) is not allowed"),
        ("2*t\u00a0", "the character U+00A0 NO-BREAK SPACE is not allowed"),
        ("t\x00", "the control character U+0000 is not allowed at column 2"),
        # numbers are decimal: Python's 0x10, 0o7, 0b1, 1_000 and 1j are not
        ("0x10*t", "'0x10' is not a number (numbers are decimal, such as 2, 0.5 or 1e-3) at column 2"),
        ("1_000*t", "'1_000' is not a number"),
        ("2*1j", "'1j' is not a number"),
        ("2t", "'2t' is not a number (numbers are decimal, such as 2, 0.5 or 1e-3; write 2*t for a product) at column 2"),
        ("1.2.3", "'1.2.3' is not a number (numbers are decimal, such as 2, 0.5 or 1e-3) at column 4"),
        ("sin(t,)", "',' with no argument after it at column 6"),  # (Python reads sin(t,) as sin(t))
        # the other signs, each with its column in the text as given
        ("t ^ 2", "'^' is not allowed (use ** for powers) at column 3"),
        ("t//2", "'//' is not allowed (use / for division) at column 2"),
        ("t % 2", "'%' is not allowed (only numbers, t, pi, e, the listed functions, + - * / ** and parentheses are "
                  "allowed) at column 3"),
        ("sin(x=t)", "'=' is not allowed (comparisons, assignments and keyword arguments are not part of an "
                     "expression) at column 6"),
        ("t.real", "'.' is not allowed (attribute access is not part of an expression) at column 2"),
        ("'abc'", "\"'\" is not allowed (strings are not part of an expression"),
        # syntax errors: the column in the text as given (a leading space counts), the end when something is missing
        ("  2*t)", "')' at column 6 has no matching '(' in '  2*t)'"),
        ("2*sin(t", "'(' at column 6 is never closed in '2*sin(t'"),
        (" 2*", "syntax error at column 4 (the end: something is missing) in ' 2*'"),
        ("t t", "syntax error at column 3 in 't t'"),
        # names and calls the grammar does not know, at their column in the text as given
        ("2 + omega", "unknown name 'omega' at column 5"),
        ("  sin", "function 'sin' at column 3 must be called"),
        ("1 + foo(t)", "unknown function 'foo' at column 5"),
        ("t + sin(t, t)", "'sin' at column 5 takes 1 argument, got 2"),
        ("atan2(t)", "'atan2' at column 1 takes 2 arguments, got 1"),
        ("min(" + ", ".join(["t"] * 17) + ")", "'min' at column 1 takes at most 16 arguments, got 17"),
    ],
)
def test_only_the_documented_tokens_are_read_and_anything_else_is_refused_at_its_column(text, message):
    for f in (check_expression, parse_expression):
        with pytest.raises(LinkwrightError) as info:
            f(text, "drivers[0].value")
        assert info.value.location == "drivers[0].value"
        assert message in info.value.message, info.value.message


def test_the_documented_tokens_are_accepted():
    # decimal numbers in every documented form, spaces and tabs between tokens, a leading and a trailing space
    q, qd, _ = parse_expression(" 1e-3*t + .5 + 1. + 1.5E2*t\t- 2e+1 ", "x").evaluate(np.array([1.0]))
    assert q[0] == pytest.approx(0.001 + 0.5 + 1.0 + 150.0 - 20.0) and qd[0] == pytest.approx(150.001)
    check_expression("min(t, 2, atan2(t, 1)) ** 2", "x")


def test_ten_thousand_deep_nesting_is_refused_quickly():
    for text in ("(" * 10000 + "t" + ")" * 10000, "-" * 10000 + "t", "sin(" * 10000 + "t" + ")" * 10000):
        start = time.perf_counter()
        with pytest.raises(LinkwrightError, match="too"):
            check_expression(text, "drivers[1].value")
        assert time.perf_counter() - start < 2.0  # refused, not computed (loose bound: no hang)


def test_a_long_flat_sum_is_one_level_of_nesting():
    """A 60-term Fourier series (about 1,000 characters, 420 nodes) is a chain of + at one level, not 60 levels; its
    value and derivatives are the series' (q = sum a sin(k t), q' = sum a k cos(k t), q'' = -sum a k^2 sin(k t)).
    Long products and quotients likewise; nesting (parentheses, calls) still counts each level."""
    a = 0.01
    text = " + ".join(f"{a}*sin({k}*t)" for k in range(1, 61))
    t = np.array([0.0, 0.3, 1.7])
    q, qd, qdd = parse_expression(text, "drivers[0].value").evaluate(t)
    k = np.arange(1, 61)[:, None]
    np.testing.assert_allclose(q, np.sum(a * np.sin(k * t), axis=0), atol=1e-12)
    np.testing.assert_allclose(qd, np.sum(a * k * np.cos(k * t), axis=0), atol=1e-12)
    np.testing.assert_allclose(qdd, -np.sum(a * k * k * np.sin(k * t), axis=0), atol=1e-10)
    check_expression("-".join(["t"] * 200), "x")
    q, _, _ = parse_expression("*".join(["(1 + t/100)"] * 20) + "/2/2", "x").evaluate(np.array([1.0]))
    assert q[0] == pytest.approx(1.01**20 / 4, rel=1e-12)
    for nested in ("(" * 61 + "t" + ")" * 61, "sin(" * 61 + "t" + ")" * 61):
        with pytest.raises(LinkwrightError, match="nested too deeply"):
            check_expression(nested, "x")
    with pytest.raises(LinkwrightError, match="too long"):
        check_expression("+".join(["t"] * 300), "x")  # 599 nodes


def test_non_finite_values_at_requested_times_are_located():
    e = parse_expression("log(t)", "drivers[2].value")
    with pytest.raises(LinkwrightError) as info:
        e.evaluate(np.array([0.0, 1.0]))
    assert info.value.location == "drivers[2].value" and "not finite at t = 0" in info.value.message
    e.evaluate(np.array([0.5, 1.0]))  # fine away from 0


def test_user_text_never_reaches_eval(monkeypatch):
    import builtins

    def forbidden(*a, **k):
        raise AssertionError("eval/exec called")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(sympy, "sympify", forbidden)
    with pytest.raises(LinkwrightError):
        check_expression("__import__('os')", "x")
    check_expression("2*pi*t", "x")


@pytest.mark.parametrize("text,message", [
    # a part without t that is not a real number has that value at every time: asin(2), log(-1) and sqrt(-1) loaded
    # (the app's live check said "valid") and were refused only when a run started, "not finite at t = 0", while
    # tan(pi/2) and log(0) were refused on load
    ("asin(2)", "asin(2) at column 1 is not a real number (asin and acos are real from -1 to 1, log above 0, "
                "sqrt from 0 on)"),
    ("log(-1)", "log(-1) at column 1 is not a real number"),
    ("sqrt(-1)", "sqrt(-1) at column 1 is not a real number"),
    ("2*t + acos(-1.5)", "acos(-1.5) at column 7 is not a real number"),
    ("log(-1)*t", "log(-1) at column 1 is not a real number"),  # (real at t = 0 alone; its velocity never)
    ("sqrt(-1)*t**2/2", "sqrt(-1) at column 1 is not a real number"),
    ("exp(asin(2))*t", "asin(2) at column 5 is not a real number"),
    ("max(t, asin(2*cos(1)))", "asin(2*cos(1)) at column 8 is not a real number"),  # 2 cos 1 = 1.08
    # where sympy's simplification makes the part (sqrt(-t**2) = I*|t|), it is named as sympy has it
    ("sqrt(-t**2)", "'sqrt(-t**2)' is not a real number: its part I = sqrt(-1) (without t) is not real"),
    # where sympy's exact arithmetic cannot tell, the value computed as a run computes it (numpy: log(0) = -inf)
    ("log(sin(pi/7)**2 + cos(pi/7)**2 - 1)", "'log(sin(pi/7)**2 + cos(pi/7)**2 - 1)' is undefined"),
])
def test_a_part_without_t_that_is_not_a_real_number_is_refused_on_load(text, message):
    for f in (check_expression, parse_expression):
        with pytest.raises(LinkwrightError) as info:
            f(text, "drivers[0].value")
        assert info.value.location == "drivers[0].value" and message in info.value.message, info.value.message


@pytest.mark.parametrize("text,at,value", [
    ("acos(2*cos(pi/3))*t + 1", 1.0, 1.0),  # cos(pi/3) = 1/2 exactly: acos(1) = 0 (in floats 2 cos(pi/3) > 1)
    ("sqrt(-1 - t)", None, None),  # real for t <= -1: loads; a run reports it at its first time, t = 0
    ("log(t)", 1.0, 0.0),  # undefined at t = 0 only
    ("asin(t)", 0.5, math.asin(0.5)),
])
def test_an_expression_real_somewhere_loads(text, at, value):
    check_expression(text, "x")
    e = parse_expression(text, "x")
    if at is not None:
        assert e.evaluate(np.array([at]))[0][0] == pytest.approx(value)
    else:
        with pytest.raises(LinkwrightError, match="value of 'sqrt\\(-1 - t\\)' is not finite at t = 0"):
            e.evaluate(np.array([0.0, 1.0]))


def test_complex_values_are_located_not_truncated_to_their_real_part():
    # sympy keeps sqrt(-1) = I, and numpy would then cast I*t to 0 (dropping the imaginary part) or fail on float(I).
    # Such expressions are refused on load now; evaluate still names the first time where the value, velocity or
    # acceleration is not real (the value first at a tie), whatever gave it a complex number.
    import sympy as sp

    from core.expr import T, DriverExpression

    sym = sp.I * T**2 / 2
    funcs = tuple(sp.lambdify(T, s, "numpy") for s in (sym, sp.diff(sym, T), sp.diff(sym, T, 2)))
    e = DriverExpression("I*t**2/2", "drivers[0].value", sym, sp.diff(sym, T), sp.diff(sym, T, 2), funcs)
    # I t²/2 and its velocity I t are real (0) at t = 0, its acceleration I is not; at t = 0.5 all three are not
    for times, what, bad_t in (([0.0, 1.0], "acceleration", 0.0), ([0.5, 1.0], "value", 0.5)):
        with pytest.raises(LinkwrightError) as info:
            e.evaluate(np.array(times))
        assert info.value.location == "drivers[0].value" and "not a real number" in info.value.message
        assert info.value.message.startswith(what) and f"t = {bad_t:g}" in info.value.message


def test_the_first_time_where_any_derivative_is_undefined_is_named():
    # sqrt(1 - t): the value is real up to t = 1 but the velocity -1/(2 sqrt(1 - t)) is infinite at t = 1, before
    # the value becomes imaginary at t = 1.5; evaluate_until gives the index of t = 1 and keeps the rows before it
    e = parse_expression("sqrt(1 - t)", "drivers[0].value")
    q, qd, qdd, k, why = e.evaluate_until(np.array([0.0, 0.75, 1.0, 1.5]))
    assert k == 2 and why == "velocity of 'sqrt(1 - t)' is not finite at t = 1"
    np.testing.assert_allclose(q[:2], [1.0, 0.5])
    np.testing.assert_allclose(qd[:2], [-0.5, -1.0])  # -1/(2 sqrt(1 - t))
    assert np.isfinite(q).all() and np.isfinite(qd).all() and np.isfinite(qdd).all()
