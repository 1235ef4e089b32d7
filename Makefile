# Every target creates the virtual environment when it is missing and installs
# what it needs into it, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
DEPS   := $(VENV)/.deps-installed
# The optional runtimes' extras (TensorFlow for SavedModels, IREE, ONNX): the tests and benchmarks run
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

.PHONY: demo test bench typecheck install clean fuzz

$(DEPS): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel
	$(PY) -m pip install --quiet ".[dev]"
	$(PY) -m pip uninstall --quiet --yes jaxport
	touch $(DEPS)

$(RUNTIME_DEPS): $(DEPS)
	$(PY) -m pip install --quiet ".[dev,tf,iree,onnx]"
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

bench: $(RUNTIME_DEPS) install
	$(PY) -m pytest -q benchmarks --benchmark-only --benchmark-columns=median,rounds --benchmark-json=build/bench.json
	$(PY) benchmarks/report.py build/bench.json

# The long fuzz campaign (at least 100,000 mutations: 20,000 of flatbuffers decoded alone,
# 8,000 of jax.export-written artifacts); prints the count of each outcome.
fuzz: install
	$(PY) -m tests.fuzz.campaign --mutations 100000 --codec-share 0.2 --jax-export-share 0.08

clean:
	rm -rf $(VENV) build *.egg-info
