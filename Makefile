# Linkwright: `make run` starts the app, `make test` runs the whole suite (GUI tests under Xvfb).
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
# Debian packages the GUI tests need: a virtual X server and Mesa's software OpenGL.
SYSTEM_PACKAGES = xvfb xauth libgl1-mesa-dri libglx-mesa0 libgl1 libegl1 libxkbcommon-x11-0 \
  libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-render-util0 libxcb-image0 \
  libxcb-xinerama0 libxcb-randr0 libdbus-1-3 libfontconfig1 fonts-dejavu-core

.PHONY: run test bench compare system-packages clean

$(BIN)/linkwright: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.test-installed: $(BIN)/linkwright
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

run: $(BIN)/linkwright
	$(BIN)/linkwright

system-packages:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing system packages: $$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "The GUI tests need these Debian packages: $$missing (as root: apt-get install $$missing)"; exit 1; \
	  fi; \
	fi

# one pytest process per core (pytest-xdist), then the few tests that time the GUI's latency, alone
test: $(VENV)/.test-installed system-packages
	QT_QPA_PLATFORM=xcb LIBGL_ALWAYS_SOFTWARE=1 $(BIN)/python -m pytest -q -n auto -m "not serial"
	QT_QPA_PLATFORM=xcb LIBGL_ALWAYS_SOFTWARE=1 $(BIN)/python -m pytest -q -m serial

# the contact bench runs with --quick (2 seeds per scene); its full set takes hours (bench/README.md)
bench: $(BIN)/linkwright
	$(BIN)/python -m pip install -q -e '.[bench]'
	for f in bench/bench_*.py; do a=; [ $$f = bench/bench_contact.py ] && a=--quick; \
	  OPENBLAS_NUM_THREADS=1 QT_QPA_PLATFORM=xcb $(BIN)/python $$f $$a || exit 1; done

compare: $(BIN)/linkwright
	$(BIN)/python -m pip install -q -e '.[compare]'
	$(BIN)/python bench/compare_engines.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
