"""Importing TensorFlow (``pip install 'jaxport[tf]'``) for the SavedModel writer and runtime, once."""

from __future__ import annotations

import functools
import sys
from typing import Any

from jaxport.adapters.runtime_logs import quiet_tensorflow
from jaxport.domain.errors import MissingExtraError


@functools.cache
def tf() -> Any:
    """The ``tensorflow`` module.

    Raises:
        MissingExtraError: TensorFlow is not installed.
    """
    # TensorFlow's Lite converter imports JAX, when it is installed, for an optional
    # feature (tensorflow/lite/python/util.py, in a try/except ImportError): a process
    # that converts or serves with TensorFlow would load JAX for nothing (about a second
    # and its memory). While TensorFlow loads, ``import jax`` fails, as TensorFlow allows.
    block = "jax" not in sys.modules
    if block:
        sys.modules["jax"] = None  # type: ignore[assignment]
    quiet_tensorflow()
    try:
        import tensorflow as tf
    except ImportError as exc:
        raise MissingExtraError("TensorFlow", "tf", exc) from exc
    finally:
        if block and sys.modules.get("jax", False) is None:
            del sys.modules["jax"]
    return tf


def xla() -> Any:
    """TensorFlow's ``tf2xla`` Python ops (``call_module``)."""
    tf()
    from tensorflow.compiler.tf2xla.python import xla  # after tf(), which loads TensorFlow without JAX

    return xla


