# Every target creates the virtual environment when it is missing and installs
# what it needs into it, so a fresh clone needs nothing else.
# The newest JAX in pyproject's range needs Python 3.12 or newer: PYTHON is the first of python3.12
# and python3.13 that runs (a pyenv shim runs only with its version selected), else pyenv's own
# 3.12.x or 3.13.x; `make test PYTHON=/path/to/python3.12` chooses another.
PYENV_ROOT ?= $(HOME)/.pyenv
find_python = $(firstword $(foreach p,$(1),$(shell $(p) -c 'import sys; print(sys.executable)' 2>/dev/null)))
ifeq ($(origin PYTHON),undefined)
PYTHON := $(call find_python,python3.12 python3.13 $(wildcard $(PYENV_ROOT)/versions/3.12*/bin/python3.12 $(PYENV_ROOT)/versions/3.13*/bin/python3.13))
endif
# The oldest JAX in the range (0.10.2) runs on Python 3.11, in a second venv.
ifeq ($(origin OLDEST_PYTHON),undefined)
OLDEST_PYTHON := $(call find_python,python3.11 $(wildcard $(PYENV_ROOT)/versions/3.11*/bin/python3.11))
endif
OLDEST := build/venv-oldest
# What the oldest JAX runs: export, serialization, calls and conversions.
OLDEST_TESTS := tests/e2e/test_export_service.py tests/e2e/test_export_record.py tests/e2e/test_artifact_interop.py \
	tests/e2e/test_module_bytes.py tests/e2e/test_runtime_calls.py tests/e2e/test_differentiation.py \
	tests/e2e/test_vmap.py tests/e2e/test_dimension_arguments.py tests/e2e/test_iree.py \
	tests/adapters/test_flatbuffers_codec.py tests/adapters/test_jax_internals.py tests/adapters/test_jax_call.py
VENV   ?= .venv
PY     := $(VENV)/bin/python
DEPS   := $(VENV)/.deps-installed
# The optional runtimes' extras (TensorFlow for SavedModels, IREE): the tests and benchmarks run
# them, the demo needs none.
RUNTIME_DEPS := $(VENV)/.deps-runtimes-installed
# src/ is the import package `jaxport`. For development the venv imports it
# through a link (build/importroot/jaxport -> src), so edits need no reinstall;
# `pip install .` builds the same package for users.
LINK   := build/importroot/jaxport
# The `jaxport` command, written as pip writes the console script of
# [project.scripts] (an editable install would add an import hook that every
# Python start in the venv pays for).
SCRIPT := $(VENV)/bin/jaxport

.PHONY: demo test test-oldest bench typecheck install clean fuzz

$(DEPS): pyproject.toml
	@test -n "$(PYTHON)" || { echo "make: no Python 3.12 or 3.13 found (python3.12, python3.13, $(PYENV_ROOT)/versions/3.1[23]*): install one (pyenv install 3.12) or run make PYTHON=/path/to/python3.12" >&2; exit 1; }
	test -x $(PY) && $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))' || { rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel
	$(PY) -m pip install --quiet ".[dev]"
	$(PY) -m pip uninstall --quiet --yes jaxport
	touch $(DEPS)

$(RUNTIME_DEPS): $(DEPS)
	$(PY) -m pip install --quiet ".[dev,tf,iree]"
	$(PY) -m pip uninstall --quiet --yes jaxport
	touch $(RUNTIME_DEPS)

$(LINK):
	mkdir -p $(dir $(LINK))
	ln -sfn ../../src $(LINK)

$(SCRIPT): $(DEPS)
	printf '#!%s\nimport sys\nfrom jaxport.application.cli import main\nif __name__ == "__main__":\n    sys.exit(main())\n' "$(abspath $(PY))" > $@
	chmod +x $@

# install also byte-compiles src/, as `pip install` does for users (and did for
# jax): with PYTHONDONTWRITEBYTECODE=1 every fresh process would compile jaxport's
# sources again (~10 ms of a 40 ms `jaxport.inspect`). Python ignores a stale file.
install: $(DEPS) $(LINK) $(SCRIPT)
	echo "$(CURDIR)/build/importroot" > "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/jaxport-dev.pth"
	$(PY) -m compileall -q src > /dev/null

demo: install
	$(PY) -m jaxport.application.demo

typecheck: install
	$(PY) -m mypy --strict -p jaxport
	$(PY) -m mypy --strict tests benchmarks

# The runtimes' extras first: installing them replaces and then removes the
# `jaxport` script, which install writes again afterwards.
test: $(RUNTIME_DEPS) typecheck
	$(PY) -m pytest -q tests
	$(MAKE) test-oldest

$(OLDEST)/.deps-installed: pyproject.toml
	@test -n "$(OLDEST_PYTHON)" || { echo "make: no Python 3.11 found for the oldest JAX (python3.11, $(PYENV_ROOT)/versions/3.11*): install it or run make OLDEST_PYTHON=/path/to/python3.11" >&2; exit 1; }
	test -x $(OLDEST)/bin/python || $(OLDEST_PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install --quiet --upgrade pip setuptools wheel
	$(OLDEST)/bin/python -m pip install --quiet ".[dev,tf,iree]" "jax==0.10.2" "jaxlib==0.10.2" pytest-xdist
	$(OLDEST)/bin/python -m pip uninstall --quiet --yes jaxport
	touch $@

# The oldest JAX of the range (0.10.2, Python 3.11) on export, serialization, calls and conversions.
test-oldest: $(OLDEST)/.deps-installed $(LINK)
	PYTHONPATH=$(CURDIR)/build/importroot $(OLDEST)/bin/python -m pytest -q -n 2 $(OLDEST_TESTS)

bench: $(RUNTIME_DEPS) install
	$(PY) -m pytest -q benchmarks --benchmark-only --benchmark-columns=median,rounds --benchmark-json=build/bench.json
	$(PY) benchmarks/report.py build/bench.json

# The long fuzz campaign (at least 100,000 mutations: 20,000 of flatbuffers decoded alone,
# 8,000 of jax.export-written artifacts); prints the count of each outcome.
fuzz: install
	$(PY) -m tests.fuzz.campaign --mutations 100000 --codec-share 0.2 --jax-export-share 0.08

clean:
	rm -rf $(VENV) build *.egg-info
