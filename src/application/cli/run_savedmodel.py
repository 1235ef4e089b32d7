"""``jaxport run DIR FUNCTION`` on a SavedModel that jaxport wrote: through TensorFlow, without JAX.

The call is checked by jaxport's domain code against the function's record
(from the SavedModel's jaxport manifest) before TensorFlow loads the model.
"""

from __future__ import annotations

import argparse

from ..savedmodel_load import load_savedmodel
from .run_converted import call_converted, pick


def run_savedmodel(args: argparse.Namespace) -> int:
    """Calls the SavedModel's function on the input files; writes or summarizes the results."""
    functions = load_savedmodel(args.path)
    named = {n: f for n, f in functions.items() if n != "serving_default" or args.function == n}
    return call_converted(args, pick(named, args.function, f"the SavedModel {args.path}"))
