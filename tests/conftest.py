"""Test-process setup for every test folder, without JAX (tests/unit runs without it).

Verification verdicts and Hypothesis's files go to temporary folders of this
process (so that pytest-xdist's workers share none, and nothing is written
in the repository), and JAX's
persistent compilation cache is off unless a test turns it on in a folder of
its own (the ``jax_compilation_cache`` fixture of tests/e2e, or a child
process's environment). The folders that run JAX set it up in their own
conftest (:mod:`tests.helpers.jax_setup`).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

# Tests never write to the user's home: the verdicts jaxport remembers go to a
# directory of this run, which child processes inherit through the
# environment, and a compilation cache the user configured for JAX is not used.
_CACHE_DIR = tempfile.mkdtemp(prefix="jaxport-test-verdicts-")
os.environ["JAXPORT_CACHE_DIR"] = _CACHE_DIR
atexit.register(shutil.rmtree, _CACHE_DIR, True)
os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)
# Hypothesis keeps its examples and caches under ./.hypothesis unless told otherwise
# (read on first use, after this).
_HYPOTHESIS_DIR = tempfile.mkdtemp(prefix="jaxport-test-hypothesis-")
os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = _HYPOTHESIS_DIR
atexit.register(shutil.rmtree, _HYPOTHESIS_DIR, True)
# The runtimes write under the home when first imported: ONNX Runtime a device id under
# $XDG_CACHE_HOME (default ~/.cache/Microsoft), Keras (with TensorFlow) ~/.keras/keras.json.
_HOME_FILES_DIR = tempfile.mkdtemp(prefix="jaxport-test-home-files-")
os.environ["XDG_CACHE_HOME"] = os.path.join(_HOME_FILES_DIR, "cache")
os.environ["KERAS_HOME"] = os.path.join(_HOME_FILES_DIR, "keras")
atexit.register(shutil.rmtree, _HOME_FILES_DIR, True)
