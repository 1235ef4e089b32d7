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
	tests/adapters/test_flatbuffers_codec.py tests/adapters/test_jax_internals.py tests/adapters/test_jax_call.py \
	tests/e2e/test_savedmodel.py tests/e2e/test_onnx.py tests/e2e/test_litert.py
# The text tests at the text extra's oldest tokenizers (0.22.x: what transformers 4.57 takes); the main venv
# runs them at the newest (0.23.x).
OLDEST_TEXT_TESTS := tests/unit/test_generation_detokenize.py tests/e2e/test_generate_text.py \
	tests/e2e/test_generate_multibyte.py
VENV   ?= .venv
PY     := $(VENV)/bin/python
DEPS   := $(VENV)/.deps-installed
# The optional runtimes' extras (TensorFlow for SavedModels, IREE, ONNX, LiteRT, KServe): the tests and benchmarks run
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

.PHONY: demo test test-oldest test-newest-jax test-runtime-only test-engines test-transformers-install bench-engines bench typecheck install wheel clean fuzz fuzz-converted fuzz-generative corpus web-deps web-node-test web-demo web-screenshot

$(DEPS): pyproject.toml
	@test -n "$(PYTHON)" || { echo "make: no Python 3.12 or 3.13 found (python3.12, python3.13, $(PYENV_ROOT)/versions/3.1[23]*): install one (pyenv install 3.12) or run make PYTHON=/path/to/python3.12" >&2; exit 1; }
	test -x $(PY) && $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))' || { rm -rf $(VENV); $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip setuptools wheel
	$(PY) -m pip install --quiet ".[jax,dev]"
	$(PY) -m pip uninstall --quiet --yes jaxport
	touch $(DEPS)

$(RUNTIME_DEPS): $(DEPS)
	$(PY) -m pip install --quiet ".[jax,dev,tf,iree,onnx,litert,serve,text,genai]"
	$(PY) -m pip uninstall --quiet --yes jaxport
	touch $(RUNTIME_DEPS)

$(LINK):
	mkdir -p $(dir $(LINK))
	ln -sfn ../../src $(LINK)

$(SCRIPT): $(DEPS)
	printf '#!%s\nimport sys\nfrom jaxport.application.cli.main import main\nif __name__ == "__main__":\n    sys.exit(main())\n' "$(abspath $(PY))" > $@
	chmod +x $@

# install also byte-compiles src/, as `pip install` does for users (and did for
# jax): with PYTHONDONTWRITEBYTECODE=1 every fresh process would compile jaxport's
# sources again (~10 ms of a 40 ms `jaxport.inspect`). Python ignores a stale file.
install: $(DEPS) $(LINK) $(SCRIPT)
	echo "$(CURDIR)/build/importroot" > "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/jaxport-dev.pth"
	$(PY) -m compileall -q src > /dev/null

demo: install
	$(PY) tools/demo.py

typecheck: install
	$(PY) -m mypy --strict -p jaxport
	$(PY) -m mypy --strict tests benchmarks

# The runtimes' extras first: installing them replaces and then removes the
# `jaxport` script, which install writes again afterwards.
test: $(RUNTIME_DEPS) typecheck web-deps
	$(PY) -m pytest -q -n 2 --dist loadfile tests
	$(MAKE) test-oldest
	$(MAKE) test-runtime-only
	$(MAKE) test-engines
	$(MAKE) test-transformers-install

$(OLDEST)/.deps-installed: pyproject.toml
	@test -n "$(OLDEST_PYTHON)" || { echo "make: no Python 3.11 found for the oldest JAX (python3.11, $(PYENV_ROOT)/versions/3.11*): install it or run make OLDEST_PYTHON=/path/to/python3.11" >&2; exit 1; }
	test -x $(OLDEST)/bin/python || $(OLDEST_PYTHON) -m venv $(OLDEST)
	$(OLDEST)/bin/python -m pip install --quiet --upgrade pip setuptools wheel
	$(OLDEST)/bin/python -m pip install --quiet ".[jax,dev,tf,iree,onnx,litert,text]" "jax==0.10.2" "jaxlib==0.10.2" \
		"tokenizers>=0.22,<0.23"
	$(OLDEST)/bin/python -m pip uninstall --quiet --yes jaxport
	touch $@

# The oldest JAX of the range (0.10.2, Python 3.11) on export, serialization, calls and conversions.
test-oldest: $(OLDEST)/.deps-installed $(LINK)
	PYTHONPATH=$(CURDIR)/build/importroot $(OLDEST)/bin/python -m pytest -q -n 2 $(OLDEST_TESTS)
	PYTHONPATH=$(CURDIR)/build/importroot $(OLDEST)/bin/python -m pytest -q -n 2 --dist loadfile $(OLDEST_TEXT_TESTS)

# ---- The newest JAX (issue 61): run it the day a JAX release appears, before it joins the range ----
# Not part of `make test`, which depends on nothing the registry holds on a given day. A venv of its own
# gets the newest jax and jaxlib pip resolves (unpinned, no pre-releases; upgraded on each run) and
# jaxport's own dependencies; jaxport runs there outside its tested range only through the explicit
# override JAXPORT_ALLOW_UNTESTED_JAX=1. It runs the byte-for-byte interop tests and the compat and
# back-compat tests, then, with JAX_CLONE=PATH (a clone of github.com/jax-ml/jax, a work tree or bare),
# JAX's suites through tools/jax_conformance.sh, through jaxport and through jax.export side by side; and
# tests.helpers.newest_jax prints what differs and why (a format version, an allowlist entry, a changed
# internal, each test that fails through jaxport and not through jax.export). Failures are reported, not
# fatal, until that report: it fails the target when anything differs.
NEWEST := build/venv-newest-jax
NEWEST_OUT := build/newest-jax
NEWEST_ENV := JAXPORT_ALLOW_UNTESTED_JAX=1 PYTHONPATH=$(CURDIR)/build/importroot
NEWEST_TESTS := tests/e2e/test_artifact_interop.py tests/e2e/test_module_bytes.py tests/e2e/test_export_record.py \
	tests/e2e/test_versions.py tests/e2e/test_exported_fields.py tests/e2e/test_jax_export_symbolic.py \
	tests/e2e/test_api_parity.py tests/e2e/test_sharding_as_jax.py tests/adapters/test_flatbuffers_codec.py \
	tests/adapters/test_jax_internals.py tests/compat/test_back_compat_records.py tests/compat/test_jax_wheel_blobs.py
NEWEST_SUITES := export_test shape_poly_test export_back_compat_test pallas/export_back_compat_pallas_test
JAX_CLONE ?=
# pytest-xdist workers for the tests and each suite (each suite's log goes to $(NEWEST_OUT)/SUITE.PEER.log).
NEWEST_JOBS ?= 2

test-newest-jax: $(LINK)
	@test -n "$(PYTHON)" || { echo "make: no Python 3.12 or 3.13 found: run make PYTHON=/path/to/python3.12" >&2; exit 1; }
	test -x $(NEWEST)/bin/python || $(PYTHON) -m venv $(NEWEST)
	$(NEWEST)/bin/python -m pip install --quiet --upgrade pip setuptools wheel
	$(NEWEST)/bin/python -m pip install --quiet --upgrade jax jaxlib . "pytest>=8" "pytest-xdist>=3.5,<4" \
		"hypothesis>=6.100" "safetensors>=0.4.3,<0.9" "absl-py>=2.1,<3"
	$(NEWEST)/bin/python -m pip uninstall --quiet --yes jaxport
	rm -rf $(NEWEST_OUT) && mkdir -p $(NEWEST_OUT)
	-$(NEWEST_ENV) $(NEWEST)/bin/python -m pytest -q -n $(NEWEST_JOBS) -p no:cacheprovider \
		--junitxml=$(NEWEST_OUT)/interop.xml $(NEWEST_TESTS)
	-for suite in $(if $(JAX_CLONE),$(NEWEST_SUITES)); do for peer in jaxport jax.export; do \
		$(NEWEST_ENV) JAXPORT_CONFORMANCE_JOBS=$(NEWEST_JOBS) JAXPORT_PYTHON=$(abspath $(NEWEST))/bin/python JAXPORT_CONFORMANCE_PEER=$$peer \
			tools/jax_conformance.sh "$(JAX_CLONE)" $$suite \
			--junitxml=$(CURDIR)/$(NEWEST_OUT)/$$(echo $$suite | tr / _).$$peer.xml \
			> $(NEWEST_OUT)/$$(echo $$suite | tr / _).$$peer.log 2>&1; \
	done; done
	$(NEWEST_ENV) $(NEWEST)/bin/python -m tests.helpers.newest_jax $(NEWEST_OUT)/interop.xml \
		$(foreach s,$(if $(JAX_CLONE),$(NEWEST_SUITES)),$(foreach p,jaxport jax.export,$(NEWEST_OUT)/$(subst /,_,$(s)).$(p).xml))

# ---- The wheel: what a deployment installs where the clone is not (docs/serving.md's Dockerfile) ----
# dist/jaxport-VERSION-py3-none-any.whl, built from src/ alone (setuptools' build/lib and egg-info go
# first: a module deleted from src/ would otherwise stay in the wheel).
WHEEL_STAMP := dist/.built
wheel: $(WHEEL_STAMP)

$(WHEEL_STAMP): $(DEPS) pyproject.toml README.md $(shell find src -name '*.py' -o -name '*.fbs' -o -name '*.mjs' -o -name py.typed)
	rm -rf build/lib build/bdist.* jaxport.egg-info dist/jaxport-*.whl
	$(PY) -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir dist .
	rm -rf build/lib build/bdist.* jaxport.egg-info
	touch $@

# ---- The runtime-only install (issue 36): the runtime extras without JAX ----
# A third venv holds only what running converted directories needs, installed from the wheel by
# exactly the README's deployment lines (`pip install --find-links dist 'jaxport[...]'`, one per
# runtime), then pytest; tests/runtime_only runs there, importing jaxport from the wheel, on the
# directories that the main venv converts into build/runtime-only-fixtures. A wrong line in the
# README fails here. Making it also checks that pip, resolving `jaxport[onnx-runtime]` as for an
# empty venv, would install no jax or jaxlib.
RUNTIME_ONLY := build/venv-runtime-only
RUNTIME_ONLY_FIXTURES := build/runtime-only-fixtures
DEPLOY_LINES := build/readme-deploy-lines.sh

$(RUNTIME_ONLY)/.deps-installed: $(WHEEL_STAMP) README.md
	@test -n "$(PYTHON)" || { echo "make: no Python 3.12 or 3.13 found: run make PYTHON=/path/to/python3.12" >&2; exit 1; }
	test -x $(RUNTIME_ONLY)/bin/python || $(PYTHON) -m venv $(RUNTIME_ONLY)
	$(RUNTIME_ONLY)/bin/python -m pip uninstall --quiet --yes jaxport
	grep '^pip install --find-links dist ' README.md > $(DEPLOY_LINES) || { echo "make: README.md shows no deployment line (pip install --find-links dist ...)" >&2; exit 1; }
	PIP_QUIET=1 PATH="$(abspath $(RUNTIME_ONLY))/bin:$$PATH" sh -ex $(DEPLOY_LINES)
	$(RUNTIME_ONLY)/bin/python -m pip install --quiet "pytest>=8"
	$(RUNTIME_ONLY)/bin/python -m pip install --quiet --dry-run --ignore-installed --find-links dist \
		--report $(RUNTIME_ONLY)/onnx-runtime-report.json "jaxport[onnx-runtime]"
	$(RUNTIME_ONLY)/bin/python -c 'import json, sys; names = {i["metadata"]["name"].lower() for i in json.load(open(sys.argv[1]))["install"]}; bad = names & {"jax", "jaxlib"}; sys.exit(f"pip would install {sorted(bad)} with jaxport[onnx-runtime]" if bad else 0)' $(RUNTIME_ONLY)/onnx-runtime-report.json
	touch $@

# The runtime-only tests: converted with the main venv, run in the one without JAX (jaxport from the wheel).
test-runtime-only: $(RUNTIME_ONLY)/.deps-installed $(RUNTIME_DEPS) $(LINK)
	PYTHONPATH=$(CURDIR)/build/importroot $(PY) -m tests.helpers.runtime_only_fixtures $(RUNTIME_ONLY_FIXTURES)
	JAXPORT_RUNTIME_ONLY_FIXTURES=$(CURDIR)/$(RUNTIME_ONLY_FIXTURES) \
		$(RUNTIME_ONLY)/bin/python -m pytest -q -p no:cacheprovider tests/runtime_only

# ---- Beside transformers' Flax models (issue 65): the README's text install resolves with them in one step ----
# A venv of its own: `pip install 'transformers>=4.50,<5' flax 'jaxport[jax,text]'` from the wheel, as one pip
# command (a ResolutionImpossible fails here), then both import (transformers' Flax GPT-2 and jaxport's tokenizer).
TRANSFORMERS := build/venv-transformers

test-transformers-install: $(WHEEL_STAMP)
	@test -n "$(PYTHON)" || { echo "make: no Python 3.12 or 3.13 found: run make PYTHON=/path/to/python3.12" >&2; exit 1; }
	test -x $(TRANSFORMERS)/bin/python || $(PYTHON) -m venv $(TRANSFORMERS)
	$(TRANSFORMERS)/bin/python -m pip uninstall --quiet --yes jaxport
	$(TRANSFORMERS)/bin/python -m pip install --quiet --find-links dist "transformers>=4.50,<5" flax "jaxport[jax,text]"
	cd $(TRANSFORMERS) && bin/python -c 'import jaxport, tokenizers, transformers; from transformers import FlaxGPT2LMHeadModel; from jaxport.adapters.tokenizers.codec import HuggingFaceTokenizer; print("transformers", transformers.__version__, "tokenizers", tokenizers.__version__)'

# ---- The engines (issue 51): Ray Serve, Ray Data and Apache Beam, in a venv of their own ----
# apache-beam caps numpy below 2.5 (and pillow, cryptography) and Ray pulls a newer protobuf than TensorFlow
# takes: neither fits the main venv. This one holds the engines' extras with JAX and ONNX (the tests write a
# bundle and its ONNX directory); tests/engines runs there on a local Ray (2 CPUs, 127.0.0.1) and Beam's
# in-process DirectRunner. bench-engines adds KServe and pytest-benchmark (it compares `jaxport serve`).
ENGINES := build/venv-engines
ENGINES_EXTRAS := jax,onnx,ray,beam

$(ENGINES)/.deps-installed: pyproject.toml
	@test -n "$(PYTHON)" || { echo "make: no Python 3.12 or 3.13 found: run make PYTHON=/path/to/python3.12" >&2; exit 1; }
	test -x $(ENGINES)/bin/python || $(PYTHON) -m venv $(ENGINES)
	$(ENGINES)/bin/python -m pip install --quiet --upgrade pip setuptools wheel
	$(ENGINES)/bin/python -m pip install --quiet ".[$(ENGINES_EXTRAS)]" "pytest>=8"
	$(ENGINES)/bin/python -m pip uninstall --quiet --yes jaxport
	touch $@

test-engines: $(ENGINES)/.deps-installed $(LINK)
	JAXPORT_ENGINE_TESTS=1 PYTHONPATH=$(CURDIR)/build/importroot $(ENGINES)/bin/python -m pytest -q tests/engines

# The engines against a plain loop and `jaxport serve`, one run (benchmarks/test_engines.py; the figures are printed).
bench-engines: $(ENGINES)/.deps-installed $(LINK)
	$(ENGINES)/bin/python -m pip install --quiet ".[$(ENGINES_EXTRAS),serve]" "pytest-benchmark>=4"
	$(ENGINES)/bin/python -m pip uninstall --quiet --yes jaxport
	PYTHONPATH=$(CURDIR)/build/importroot $(ENGINES)/bin/python -m pytest -q -s benchmarks/test_engines.py

bench: $(RUNTIME_DEPS) install
	$(PY) -m pytest -q benchmarks --benchmark-only --benchmark-columns=median,rounds --benchmark-json=build/bench.json
	$(PY) benchmarks/report.py build/bench.json

# The long fuzz campaign (at least 100,000 mutations: 20,000 of flatbuffers decoded alone,
# 8,000 of jax.export-written artifacts); prints the count of each outcome.
fuzz: install
	$(PY) -m tests.fuzz.campaign --mutations 100000 --codec-share 0.2 --jax-export-share 0.08

# Hostile converted directories (per target: 120 with a golden example, half re-sealed model files, half
# hostile manifests; 60 re-sealed model files without golden examples), loaded with and without
# verification; prints the count of each outcome.
fuzz-converted: $(RUNTIME_DEPS) install
	$(PY) -m tests.fuzz.converted_campaign --count 120

# Hostile generative bundles and their ONNX conversions (200 each: specs, tokenizers, templates, GenAI files,
# damage) through load_generator, generate, chat, check, 12 each through serve; then 300 hostile requests to
# one server; prints the count of each outcome.
fuzz-generative: $(RUNTIME_DEPS) install
	$(PY) -m tests.fuzz.generative_campaign --count 200 --serve 12 --clients 300

# The whole ONNX user corpus (tests/helpers/onnx_user_corpus*.py: over 400 functions of jax.numpy, lax, jax.nn,
# jax.scipy and jnp.linalg, converted and run on ONNX Runtime against jax.jit); prints the counts (matched,
# refused by operation, wrong, untyped) and fails on any wrong or untyped. make test checks one slice of it,
# rotating with the day; JAXPORT_ONNX_CORPUS_SLICE=k/n chooses one (docs/developers/onnx-corpus.md).
corpus: $(RUNTIME_DEPS) install
	JAXPORT_ONNX_CORPUS=all $(PY) -m pytest -q -s tests/e2e/test_onnx_user_corpus.py -k whole_corpus

# ---- The browser (issue 31): ONNX Runtime Web under Node and in Debian's Chromium ----
# web-deps installs what tests/e2e/test_web.py needs beyond the venv: Debian's chromium
# (/usr/bin/chromium; playwright-core downloads no browser) and the npm packages of
# package.json/package-lock.json, exactly (npm ci). HOME and XDG_* point into build/ so that
# npm writes nothing under the user's home. Without chromium the browser test skips and says so.
WEB_HOME := $(CURDIR)/build/web-home
WEB_ENV  := HOME=$(WEB_HOME) XDG_CONFIG_HOME=$(WEB_HOME)/config XDG_CACHE_HOME=$(WEB_HOME)/cache XDG_DATA_HOME=$(WEB_HOME)/data
WEB_NPM  := node_modules/.package-lock.json
WEB_PORT ?= 8765

$(WEB_NPM): package.json package-lock.json
	mkdir -p $(WEB_HOME)
	$(WEB_ENV) npm ci --no-audit --no-fund
	touch $(WEB_NPM)

web-deps: $(WEB_NPM)
	test -x /usr/bin/chromium || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
		|| echo "web-deps: Debian's chromium could not be installed: the browser test will be skipped"

# jaxport.mjs's unit tests under Node, on the test models converted into build/web-fixtures
# (pytest's tests/e2e/test_web.py runs the same tests on its own conversions).
web-node-test: install $(WEB_NPM)
	rm -rf build/web-fixtures
	$(PY) -m tests.helpers.web_models build/web-fixtures
	$(WEB_ENV) JAXPORT_WEB_FIXTURES=$(CURDIR)/build/web-fixtures node --test tests/web/

# The demo: the GPT-2-like example saved as a bundle with golden examples, converted by
# `jaxport convert --to onnx --web` into build/web-demo/gpt, and the
# repository served on 127.0.0.1 (docs/web/index.html loads build/web-demo/gpt and
# node_modules/onnxruntime-web). Open http://127.0.0.1:$(WEB_PORT)/docs/web/index.html
build/web-demo/gpt/manifest.json: install $(WEB_NPM)
	rm -rf build/web-demo
	$(PY) -m tests.helpers.web_models --bundles build/web-demo gpt
	$(PY) -m jaxport convert build/web-demo/bundles/gpt --to onnx --web -o build/web-demo/gpt

web-demo: build/web-demo/gpt/manifest.json
	@echo "serving the demo at http://127.0.0.1:$(WEB_PORT)/docs/web/index.html (Ctrl-C stops)"
	$(PY) -m http.server $(WEB_PORT) --bind 127.0.0.1

# docs/web-demo.png again: the demo page in headless Chromium (tests never write into docs/).
web-screenshot: build/web-demo/gpt/manifest.json web-deps
	port=$$($(PY) -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'); \
		$(PY) -m http.server $$port --bind 127.0.0.1 > /dev/null 2>&1 & server=$$!; \
		sleep 1; \
		$(WEB_ENV) node tests/web/browser.mjs "http://127.0.0.1:$$port/docs/web/index.html" docs/web-demo.png > build/web-demo/page.json; \
		status=$$?; kill $$server; exit $$status

clean:
	rm -rf $(VENV) build dist *.egg-info node_modules
