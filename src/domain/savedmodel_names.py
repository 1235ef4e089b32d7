"""How a SavedModel that jaxport writes names its signatures and variables.

Inputs and outputs are named by the rule of every target
(:mod:`.wire_names`). A signature is named after its function; a function
whose name TensorFlow does not accept as an attribute and signature name
gets the name escaped as a wire name's first segment (``<lambda>`` is
``.3clambda.3e``). ``serving_default`` (TensorFlow Serving's default key)
calls the function named as the default, or the only one. A weight's
variable is named by its key path, the characters TensorFlow refuses
written ``_``.
"""

from __future__ import annotations

import re

from .wire_names import escape_segment

#: What the converter names its refusals' target.
SAVEDMODEL = "a TensorFlow SavedModel"
#: The signature TensorFlow Serving calls when a request names none.
DEFAULT_SIGNATURE = "serving_default"

_REFUSED = re.compile(r"[^A-Za-z0-9_.\-/>]")
_FIRST = re.compile(r"[A-Za-z0-9.]")
_SIGNATURE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def tf_name(name: str) -> str:
    """``name`` as TensorFlow accepts it for a variable.

    >>> tf_name("arg1/dense/w"), tf_name("a~1b"), tf_name("_private"), tf_name("")
    ('arg1/dense/w', 'a_1b', 'x_private', 'x')
    """
    escaped = _REFUSED.sub("_", name)
    return escaped if _FIRST.match(escaped) else "x" + escaped


def signature_name(function: str) -> str:
    """The signature (and the saved object's attribute) of ``function``.

    >>> signature_name("predict"), signature_name("<lambda>"), signature_name("serving_default")
    ('predict', '.3clambda.3e', 'serving_default_')
    """
    if function == DEFAULT_SIGNATURE:
        return function + "_"
    return function if _SIGNATURE.fullmatch(function) else escape_segment(function, first=True)
