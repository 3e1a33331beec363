"""An outside-style fuzzing campaign of the `linkwright` command (not part of the test suite; minutes to hours).

Every call runs in its own process, forked from a parent that imported Linkwright and loaded the contact kernels
once (so thousands of calls cost seconds each, not an interpreter start each); the GUI's `--screenshot` runs as a
real `linkwright` process under Xvfb.  Inputs: randomly mutated copies of every example in resources/examples
(numbers, strings, types, deletions, duplications, piles of bodies, driver expressions from the whitelist grammar),
hostile files (special files, huge numbers, deep nesting, odd unicode, bad encodings) and abused arguments.

Each outcome is judged as the fuzz suite judges it (tests/fuzz/harness.py): status 0, 2 or 3; for 2 one located
message line; no traceback or warning; at most --timeout seconds; no non-finite number in any output.  Failures are
written to OUT/failures.jsonl with the input files kept under OUT/cases/ to replay them.

    nice python bench/fuzz_campaign.py --calls 2500 --gui 60 --seed 7 --out /tmp/campaign
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXAMPLES = ROOT / "resources" / "examples"

from tests.fuzz.strategies import _paths  # noqa: E402  (after the path set-up above)

# ---- values ----------------------------------------------------------------------------------------------------
FLOATS = [1e308, -1e308, 1.7976931348623157e308, 1e200, -1e200, 1e100, 1e30, 1e15, 1e7, 1e6 + 1, 999999.9,
          1e-5, 1e-9, 1e-12, 1e-100, 1e-300, 5e-324, 2.2250738585072014e-308, -0.0, 0.0, 0.5, -1.0, 3.0,
          math.pi, 2 ** 53 + 1.0, 1 - 1e-16]
INTS = [0, 1, -1, 2, 3, 7, 100, 10 ** 6, 2 ** 31, 2 ** 63, 2 ** 64, 10 ** 30, 10 ** 400, -(10 ** 400), 9007199254740993]
STRINGS = ["", " ", "\ud800", "\udfff", "a\u0000b", "\u202e" + "drow", "\u200b", "e\u0301", "𝕏", "ground", "crank",
           "A", "B", "revolute", "prismatic", "spherical", "universal", "cylindrical", "planar", "spatial", "box",
           "sphere", "cylinder", "halfspace", "capsule", "ellipsoid", "implicit", "explicit", "newton",
           "interior-point", "x" * 5000, "名前", "t", "2*pi*t", "NaN", "Infinity", "-0", "1e999", "\n", "\t", "\\",
           "\"", "{}", "[]"]
EXPR_LEAVES = ["t", "pi", "e", "0", "1", "2", "0.5", "1e-300", "1e300", "64", "2**64", "3.0", "(1-t)", "(t-1)",
               "(t-t)", "(-t)", "1e-9"]
EXPR_F1 = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "log", "sqrt", "abs"]


def rand_expr(r: random.Random, depth: int = 0) -> str:
    """A driver expression from the whitelist grammar (and some just outside it)."""
    k = r.random()
    if depth > r.randint(1, 6) or k < 0.25:
        return r.choice(EXPR_LEAVES)
    if k < 0.55:
        return f"({rand_expr(r, depth + 1)}){r.choice(['+', '-', '*', '/', '**'])}({rand_expr(r, depth + 1)})"
    if k < 0.8:
        return f"{r.choice(EXPR_F1)}({rand_expr(r, depth + 1)})"
    if k < 0.88:
        return f"atan2({rand_expr(r, depth + 1)}, {rand_expr(r, depth + 1)})"
    if k < 0.95:
        n = r.randint(2, 18)
        return f"{r.choice(['min', 'max'])}({', '.join(rand_expr(r, depth + 2) for _ in range(n))})"
    return r.choice(["t**t**t**t**t**t", "((t*2**64)**64)**64", "9**9**9", "t^2", "t if t else 1", "x*t",
                     "__import__('os')", "sin(t", "()", "1/(1e-320)", "exp(exp(exp(t)))", "exp(1000*t)",
                     "log(log(t))", "sqrt(sqrt(-t))", "tan(pi/2)", "1/(1-t)", "log(1-t)", "asin(2*t)",
                     "(-8)**(1/3)*t", "t**-64", "atan2(0, 0*t)", "abs(t)**0.5", "min(t)", "max()", "sin(t, t)"])


def rand_value(r: random.Random, old):
    """A replacement for `old`: mostly the same kind (to get past type checks), sometimes anything."""
    k = r.random()
    if k < 0.06:
        return r.choice([None, True, [], {}, [1], "x", [[[]]], {"a": 1}, 0, 1.5])
    if isinstance(old, bool):
        return not old
    if isinstance(old, (int, float)):
        if k < 0.35:
            return r.choice(FLOATS) * r.choice([1, -1])
        if k < 0.45:
            return r.choice(INTS)
        return old * r.choice([0, -1, 1e-6, 1e6, 1e12, 1.0000001, 1e-12, 2, 10, 0.5, 1.5, 100])
    if isinstance(old, str):
        return rand_expr(r) if k < 0.55 else r.choice(STRINGS)
    if isinstance(old, list):
        if old and k < 0.5:
            return [rand_value(r, x) for x in old]
        return r.choice([[], old + old, old[:1], old * 40, [r.choice(FLOATS)] * r.randint(0, 5)])
    if isinstance(old, dict):
        return {kk: (rand_value(r, v) if r.random() < 0.3 else v) for kk, v in old.items()}
    return r.choice(FLOATS)


def _get(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def mutate(r: random.Random, doc: dict) -> str:
    """The text of `doc` with one to four mutations."""
    doc = copy.deepcopy(doc)
    for _ in range(r.choice([1, 1, 1, 2, 2, 3, 4])):
        paths = [p for p in _paths(doc) if p]  # (every path into the document: the fuzz suite's own helper)
        if not paths:
            break
        path = r.choice(paths)
        parent, key = _get(doc, path[:-1]), path[-1]
        kind = r.random()
        if kind < 0.6:
            if isinstance(parent[key], str) and key not in ("value", "type", "space", "method") and r.random() < 0.7:
                continue  # names are referenced elsewhere: renaming one mostly tests the reference check
            parent[key] = rand_value(r, parent[key])
        elif kind < 0.68:
            del parent[key]
        elif kind < 0.74 and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif kind < 0.84 and isinstance(doc.get("drivers"), list) and doc["drivers"] and isinstance(doc["drivers"][0], dict):
            doc["drivers"][r.randrange(len(doc["drivers"]))]["value"] = rand_expr(r)
        elif kind < 0.9 and isinstance(doc.get("bodies"), list) and doc["bodies"]:
            b = r.choice(doc["bodies"])
            n = r.choice([2, 5, 20, 60])
            doc["bodies"] += [dict(copy.deepcopy(b), name=f"pile{i}") if isinstance(b, dict) else b for i in range(n)]
        elif kind < 0.95 and isinstance(parent, dict):
            parent[r.choice(STRINGS[:12])] = rand_value(r, 1.0)  # an unknown key
        else:
            parent[key] = {"a": [[[[[[[[[1]]]]]]]]], "b": parent[key]}
    text = json.dumps(doc, ensure_ascii=r.random() < 0.5, allow_nan=True)
    if r.random() < 0.05:  # text-level damage
        i = r.randrange(len(text))
        text = text[:i] + r.choice(["", "NaN", "Infinity", "-Infinity", "1" * 500, "\x00", "\ufeff", "}", ","]) + text[i + 1:]
    return text


def hostile_files(folder: Path) -> list[Path]:
    """Files that are hostile as files: special files, sizes, nesting, encodings."""
    folder.mkdir(parents=True, exist_ok=True)
    fb = (EXAMPLES / "fourbar.json").read_text()
    items = {
        "empty.json": b"", "bom.json": b"\xef\xbb\xbf" + fb.encode(), "utf16.json": fb.encode("utf-16"),
        "latin1.json": fb.replace("Crank", "Kr\u00e4nk").encode("latin-1"), "nul.json": b"\x00" * 100,
        "deep_list.json": b"[" * 100000 + b"]" * 100000, "deep_obj.json": b'{"a":' * 50000 + b"1" + b"}" * 50000,
        "nan.json": fb.replace("-9.81", "NaN").encode(), "inf.json": fb.replace("-9.81", "-Infinity").encode(),
        "bigexp.json": fb.replace("-9.81", "1e999999").encode(), "dupkeys.json": fb.replace('"version": 1,', '"version": 1, "version": 2,').encode(),
        "array.json": b"[1, 2, 3]", "string.json": b'"linkwright"', "number.json": b"1e308", "null.json": b"null",
        "huge.json": b'{"x": "' + b"a" * (64 * 2 ** 20) + b'"}', "lone_surrogate_bytes.json": fb.replace("Crank", "\\ud800\\udc00\\udc00").encode(),
        "bad_utf8.json": fb.encode().replace(b"Crank", b"\xff\xfe\xc0\xaf"), "crlf.json": fb.replace("\n", "\r\n").encode(),
    }
    out = []
    for name, data in items.items():
        p = folder / name
        p.write_bytes(data)
        out.append(p)
    fifo = folder / "fifo.json"
    if not fifo.exists():
        os.mkfifo(fifo)
    loop = folder / "loop.json"
    if not loop.is_symlink():
        os.symlink(folder / "loop2.json", loop)
        os.symlink(loop, folder / "loop2.json")
    noperm = folder / "noperm.json"
    noperm.write_text(fb)
    noperm.chmod(0)
    return out + [fifo, loop, noperm, Path("/dev/zero"), Path("/dev/urandom"), Path("/dev/null"), folder,
                  folder / "missing.json", Path("/proc/self/status")]


NUMS = ["1", "0.5", "0.02", "0", "-1", "1e308", "1e-320", "5e-324", "nan", "inf", "-inf", "1e6", "1e-9", "abc", "",
        "0x1p3", "1_000", "1" * 400, "2", "100"]


def arguments(r: random.Random, cmd: str, file: str, out_dir: Path) -> tuple[list[str], list[Path]]:
    """A command line for `cmd` on `file` (mostly sane options, sometimes abused) and the output files it names."""
    outs: list[Path] = []

    def out(ext: str) -> str:
        k = r.random()
        if k < 0.85:
            p = out_dir / f"out{ext}"
            outs.append(p)
            return str(p)
        return r.choice(["/dev/full", "/proc/version", str(out_dir), str(out_dir / "no" / "x.csv"), "-",
                         str(out_dir / ("x" * 300 + ext)), "/"])

    abuse = r.random() < 0.12
    if cmd == "fourbar":
        lens = [r.choice(["4", "1", "3.5", "3", "2"]) if r.random() < 0.7 else r.choice(NUMS) for _ in range(4)]
        if r.random() < 0.1:
            lens = lens[: r.randint(0, 5)]
        argv = ["fourbar", "--lengths", *lens] + (["--json"] if r.random() < 0.5 else [])
    elif cmd == "analyze":
        argv = ["analyze", file] + (["--json"] if r.random() < 0.5 else [])
    elif cmd == "kinematics":
        argv = ["kinematics", file, "--steps", r.choice(["4", "10", "20"]) if not abuse else r.choice(NUMS)]
        if r.random() < 0.3:
            argv += ["--t-end", r.choice(["1", "2", "0.5"]) if not abuse else r.choice(NUMS)]
        k = r.random()
        argv += ["--json"] if k < 0.3 else (["--csv", out(".csv")] if k < 0.8 else [])
    else:
        argv = ["simulate", file, "--t-end", r.choice(["0.02", "0.01", "0.03"]) if not abuse else r.choice(NUMS)]
        if r.random() < 0.3:
            argv += ["--dt", r.choice(["0.01", "0.005"]) if not abuse else r.choice(NUMS)]
        if r.random() < 0.3:
            argv += ["--method", r.choice(["implicit", "explicit", "x"])]
        if r.random() < 0.2:
            argv += ["--solver", r.choice(["newton", "interior-point", "y"])]
        if r.random() < 0.7:
            argv += ["--out", out(r.choice([".csv", ".npz"]))]
    if abuse and r.random() < 0.5:
        argv.insert(r.randrange(1, len(argv) + 1), r.choice(["--bogus", "-", "--", "--json", "--help", "\ud800"]))
    return argv, outs


# ---- running and judging -------------------------------------------------------------------------------------------
def run_forked(argv: list[str], workdir: Path, timeout: float) -> tuple[int, str, str, float, bool]:
    """Run app.cli.main(argv) in a forked child; (status, stdout, stderr, seconds, hung)."""
    so, se = workdir / "stdout", workdir / "stderr"
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.setsid()
            fo = os.open(so, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            fe = os.open(se, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(fo, 1)
            os.dup2(fe, 2)
            from app.cli import main

            try:
                status = main(list(argv))
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(int(status) & 0xFF)
        except BaseException:  # noqa: BLE001 - the traceback is the finding
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
            os._exit(101)
    hung = False
    while True:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - t0 > timeout:
            hung = True
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            st = -9
            break
        time.sleep(0.01)
    dt = time.monotonic() - t0
    status = os.waitstatus_to_exitcode(st) if st != -9 else -9
    read = lambda p: p.read_text(encoding="utf-8", errors="replace") if p.exists() else ""  # noqa: E731
    return status, read(so), read(se), dt, hung


def judge(argv, status, stdout, stderr, seconds, hung, outputs) -> str:
    """'' when the outcome keeps the README's promise, else the class of the failure and a short detail."""
    from tests.fuzz.harness import assert_finite_file, assert_finite_text

    if hung:
        return f"hang: more than {seconds:.0f} s"
    if status not in (0, 2, 3):
        return f"status {status}: {stderr.strip().splitlines()[-1][:200] if stderr.strip() else ''}"
    if "Traceback" in stderr:
        return "traceback: " + stderr.strip().splitlines()[-1][:200]
    if "Warning" in stderr:
        return "warning: " + next(ln for ln in stderr.splitlines() if "Warning" in ln)[:200]
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if status == 2:
        msgs = [ln for ln in lines if ln.startswith("error: ") or ": error: " in ln]
        rest = [ln for ln in lines if ln not in msgs and not ln.startswith(("usage:", " "))]
        if len(msgs) != 1 or rest:
            return "message: " + " | ".join(lines)[:200]
    if status == 3 and len(lines) != 1:
        return "message (3): " + " | ".join(lines)[:200]
    try:
        if "--help" not in argv:
            assert_finite_text(stdout, "stdout")
        for p in outputs:
            if p.is_file():
                assert_finite_file(p, p.name)
    except AssertionError as exc:
        return f"non-finite: {str(exc)[:200]}"
    except Exception as exc:  # noqa: BLE001 - an unreadable output is a finding too
        return f"bad output: {type(exc).__name__}: {exc}"[:200]
    return ""


def gui_call(file: Path, out_png: Path, timeout: float, t: str | None) -> tuple[int, str, float, bool]:
    """`linkwright --screenshot OUT FILE [--time T]` as a real process under xvfb-run."""
    env = dict(os.environ, QT_QPA_PLATFORM="xcb", LIBGL_ALWAYS_SOFTWARE="1", PYTHONPATH=str(ROOT))
    cmd = ["xvfb-run", "-a", sys.executable, "-m", "app", "--screenshot", str(out_png), str(file)]
    if t is not None:
        cmd += ["--time", t]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, start_new_session=True)
        return p.returncode, p.stderr, time.monotonic() - t0, False
    except subprocess.TimeoutExpired as exc:
        return -9, (exc.stderr or b"").decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or ""), timeout, True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2500, help="command-line calls")
    ap.add_argument("--gui", type=int, default=60, help="GUI --screenshot calls")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds before a call counts as a hang")
    ap.add_argument("--out", type=Path, default=Path("/tmp/linkwright-campaign"))
    a = ap.parse_args()
    r = random.Random(a.seed)
    a.out.mkdir(parents=True, exist_ok=True)
    cases = a.out / "cases"
    cases.mkdir(exist_ok=True)
    work = a.out / "work"
    work.mkdir(exist_ok=True)
    hostile = hostile_files(a.out / "hostile")
    examples = {p.stem: json.loads(p.read_text()) for p in sorted(EXAMPLES.glob("*.json"))}

    # warm the parent once: every forked call then starts with the modules and the contact kernels loaded (run the
    # campaign on a tree that is not being edited: a module imported later in a child would be the edited one)
    import app.cli
    import core.kinematics  # noqa: F401
    from core.cli import build_parser
    from core.contact import prepare_kernels

    build_parser()
    app.cli.build_gui_parser()
    prepare_kernels()

    failures = (a.out / "failures.jsonl").open("a")
    counts: dict[str, int] = {}
    t_start = time.monotonic()
    for i in range(a.calls):
        cmd = r.choice(["analyze", "kinematics", "simulate", "analyze", "kinematics", "simulate", "fourbar"])
        name = r.choice(sorted(examples))
        if r.random() < 0.1:
            path, text = r.choice(hostile), None
        else:
            text = mutate(r, examples[name])
            path = work / "doc.json"
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        for p in work.glob("out*"):
            p.unlink()
        argv, outs = arguments(r, cmd, str(path), work)
        status, so, se, dt, hung = run_forked(argv, work, a.timeout)
        verdict = judge(argv, status, so, se, dt, hung, outs)
        counts[str(status)] = counts.get(str(status), 0) + 1
        if verdict:
            keep = cases / f"{i:05d}.json"
            if text is not None:
                keep.write_text(text, encoding="utf-8", errors="surrogatepass")
            rec = {"i": i, "argv": argv, "input": str(keep if text is not None else path), "verdict": verdict,
                   "status": status, "seconds": round(dt, 2), "stderr": se[-3000:]}
            failures.write(json.dumps(rec, ensure_ascii=True) + "\n")
            failures.flush()
            print(ascii(f"[{i}] {verdict}  ::  {' '.join(argv)[:160]}"), flush=True)
        if i % 100 == 0:
            print(f"-- {i} calls, {time.monotonic() - t_start:.0f} s, statuses {counts}", flush=True)
    for i in range(a.gui):
        if r.random() < 0.2:
            path, text = r.choice(hostile[:12] + hostile[-9:-3]), None
        else:
            text = mutate(r, examples[r.choice(sorted(examples))])
            path = work / "gui.json"
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        png = work / "shot.png"
        png.unlink(missing_ok=True)
        t = r.choice([None, None, "0.5", "0.02", "1e308", "-1", "nan"])
        status, se, dt, hung = gui_call(path, png, max(a.timeout, 60.0), t)
        lines = [ln for ln in se.splitlines() if ln.strip() and "xvfb" not in ln.lower()]
        verdict = ("hang" if hung else f"status {status}" if status not in (0, 2, 3) else
                   "traceback" if "Traceback" in se else "warning" if "Warning" in se else
                   "no screenshot" if status in (0, 3) and not png.is_file() else "")
        counts[f"gui {status}"] = counts.get(f"gui {status}", 0) + 1
        if verdict:
            keep = cases / f"gui{i:03d}.json"
            if text is not None:
                keep.write_text(text, encoding="utf-8", errors="surrogatepass")
            failures.write(json.dumps({"gui": i, "time": t, "input": str(keep if text is not None else path),
                                       "verdict": verdict, "status": status, "stderr": "\n".join(lines)[-3000:]}) + "\n")
            failures.flush()
            print(ascii(f"[gui {i}] {verdict}: {lines[-1][:200] if lines else ''}"), flush=True)
    print(f"done: {a.calls} calls + {a.gui} GUI calls in {time.monotonic() - t_start:.0f} s; statuses {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
