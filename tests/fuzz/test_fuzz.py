"""The fuzz suite: mutated examples, generated driver expressions and hostile command lines must all end with
status 0, 2 or 3, a one-line located message for 2, no traceback or warning, within a CPU bound, and with only
finite numbers in every output.  The normal test command runs a fixed, bounded set of cases;
LINKWRIGHT_FUZZ_EXAMPLES=N runs N random cases per test (see docs/developer.md)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import io
from core.errors import LinkwrightError
from core.expr import check_expression, parse_expression
from tests.conftest import EXAMPLES
from tests.fuzz.cases import SCENE_DOCS, special_inputs, write_regression_docs
from tests.fuzz.harness import check, run_cli
from tests.fuzz.strategies import arguments, documents, expressions, fuzz_settings, fuzz_timeout

EXPRESSION_CPU = 7.0  # s: check (1 s budget) + compile (5 s budget) + evaluation, with margin


@pytest.mark.timeout(fuzz_timeout(200))
@fuzz_settings(200)
@given(text=expressions)
def test_generated_expressions_are_refused_with_a_location_or_evaluate_finitely(text):
    t0 = time.process_time()
    try:
        check_expression(text, "drivers[0].value")
        e = parse_expression(text, "drivers[0].value")
        q = e.evaluate(np.linspace(0.0, 2.0, 9))
        assert all(np.isfinite(x).all() for x in q)  # evaluate raises rather than returning a non-finite value
    except LinkwrightError as exc:
        assert exc.location == "drivers[0].value" and exc.message and "\n" not in exc.message
    assert time.process_time() - t0 < EXPRESSION_CPU


@pytest.mark.timeout(fuzz_timeout(80))
@fuzz_settings(80)
@given(text=documents(), command=st.sampled_from(["analyze", "kinematics", "simulate"]))
def test_mutated_examples_through_every_command(text, command, tmp_path_factory):
    folder = tmp_path_factory.mktemp("doc")
    path = folder / "doc.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:  # the loader alone: a Mechanism or a located error, nothing else
        io.loads(text.encode("utf-8", "surrogatepass"))
    except LinkwrightError as exc:
        assert "\n" not in str(exc)
    extra = {"analyze": [], "kinematics": ["--steps", "4"], "simulate": ["--t-end", "0.02"]}[command]
    out = folder / ("out.npz" if command == "simulate" else "out.csv")
    outputs = {"analyze": [], "kinematics": ["--csv", str(out)], "simulate": ["--out", str(out)]}[command]
    check(run_cli([command, str(path), *extra, *outputs], outputs=[out]))


@pytest.fixture(scope="module")
def cli_inputs(tmp_path_factory):
    """Inputs (examples, regression documents, special files) and outputs (good and bad paths) for argument fuzzing."""
    folder = tmp_path_factory.mktemp("cli")
    files = [str(EXAMPLES / n) for n in ("fourbar.json", "contact_two_spheres.json", "slider_crank.json")]
    files += [str(p) for p in write_regression_docs(folder).values()]
    files += [str(p) for p in write_regression_docs(folder, SCENE_DOCS).values()]
    files += list(special_inputs(folder).values()) + [str(folder / "missing.json")]
    (folder / "sub").mkdir()
    outputs = [str(folder / "o.csv"), str(folder / "o.npz"), str(folder / "o.txt"), "/dev/full", "/proc/version",
               str(folder / "sub"), str(folder / "nope" / "o.csv"), "-"]
    return folder, files, outputs


@pytest.mark.timeout(fuzz_timeout(60))
@fuzz_settings(60)
@given(data=st.data())
def test_hostile_command_lines(data, cli_inputs):
    folder, files, outputs = cli_inputs
    argv = data.draw(arguments(files, outputs))
    written = [folder / "o.csv", folder / "o.npz"]
    for p in written:
        p.unlink(missing_ok=True)
    check(run_cli(argv, outputs=written))
