"""The wheel (`pip install .`) holds every package and the shipped resources, and an installed copy finds them."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile

from tests.conftest import ROOT


def _config():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_package_list_is_every_package_of_the_tree():
    # the list in pyproject.toml is explicit (it also maps resources/): a new sub-package must be added to it
    tree = {".".join(p.parent.relative_to(ROOT).parts) for top in ("core", "app") for p in (ROOT / top).rglob("__init__.py")}
    listed = {p for p in _config()["packages"] if p.split(".")[0] != "linkwright_resources"}
    assert listed == tree
    # and a sub-package of linkwright_resources per folder of resources/ (setuptools ships each folder's data as
    # its own package)
    folders = {f"linkwright_resources.{p.name}" for p in (ROOT / "resources").iterdir()
               if p.is_dir() and not p.name.startswith(("_", "."))}
    assert {p for p in _config()["packages"] if p.startswith("linkwright_resources.")} == folders


def test_wheel_ships_the_resources_and_an_installed_copy_finds_them(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = tmp_path.glob("linkwright-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"linkwright_resources/{p.relative_to(ROOT / 'resources').as_posix()}"
               for p in (ROOT / "resources").rglob("*") if p.is_file()}
    assert shipped and shipped <= names
    assert "core/contact/kernels.py" in names and "app/main.py" in names
    # unpacked into a folder of its own (no source tree beside it), core.resources points into the wheel's copy;
    # python -S: no site-packages, so the editable install of this checkout cannot answer instead
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from core.resources import resource_dir; "
            "d = resource_dir(); print(d); print((d / 'examples' / 'fourbar.json').is_file())")
    out = subprocess.run([sys.executable, "-S", "-c", code, str(target)], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout.split("\n")
    assert out[0] == str(target / "linkwright_resources")
    assert out[1] == "True"
