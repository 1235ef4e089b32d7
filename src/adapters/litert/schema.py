"""LiteRT's ``.tflite`` flatbuffer schema and its object API, imported in one place.

``ai_edge_litert`` (the ``ai-edge-litert`` package, in both LiteRT extras)
generates the schema's readers (``schema``) and the object API that reads a
model into mutable objects and writes it back (``flatbuffer_utils``). The
modules that read or rewrite a ``.tflite`` file take them from here
(:mod:`.tflite_file`, :mod:`.narrow_constants`, :mod:`.shared_model`); the
interpreter (:mod:`.runtime`) needs neither.
"""

from __future__ import annotations

from jaxport.domain.errors import MissingExtraError

try:
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils
except ImportError as exc:  # the extra is not installed
    raise MissingExtraError("LiteRT's runtime (ai-edge-litert)", "litert-runtime", exc) from exc

__all__ = ["flatbuffer_utils", "schema"]
