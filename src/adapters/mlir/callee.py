"""The module of an exported function, deserialized once for all the lowerings that call it.

Each ``jax.jit`` lowering has its own MLIR context, and merging a module into
the caller's consumes it, so every lowering that calls an exported function
needs a fresh ``ir.Module`` of it in that context. Deserializing the portable
artifact (VHLO, upgraded to this jaxlib's StableHLO) is most of what the first
such lowering costs, and ``jax.export`` pays it on every lowering; parsing
the same module written as plain MLIR bytecode by this jaxlib takes a fifth
of the time. :class:`CalleeModule` writes the module once as plain bytecode
(a tenth of the deserialization's time); every later lowering in the process
parses that bytecode, whatever its call site or argument shapes. (Across
processes, JAX's persistent compilation cache serves compiled calls; the
lowering that computes its key deserializes the artifact once per process, as
``jax.export`` does.)

When to write it: a module lowered once never needs the bytecode, and
writing it would be a tenth more work than ``jax.export`` does for that first
lowering. A polymorphic module is lowered once per shape, so its first
lowering writes the bytecode; a module of static shapes is mostly lowered
once (its eager call compiles once), so its second lowering, if one comes,
deserializes the artifact again (as ``jax.export`` does for every lowering)
and writes the bytecode then.

(A detached copy of the module, ``Operation.clone``, costs half as much as
writing the bytecode, but it keeps the first caller's whole MLIR context
alive with the copy: about 2 MB more per artifact at 2,000 operations, 8 MB
at 20,000, for as long as the artifact is loaded.)
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from typing import Any

from jaxlib.mlir import ir  # what jax.extend.mlir re-exports

from .dimension_args import MARKER
from .module import read_module


class CalleeModule:
    """Makes the module of one exported function in the context of each lowering.

    Args:
        portable: the StableHLO portable artifact (called when the module is deserialized).
        standard_form: given the deserialized module, the module with a ``main``
            of the standard form, or None when it has that form already (see
            :mod:`~jaxport.adapters.mlir.dimension_args`).
        polymorphic: whether the module is lowered once per shape (symbolic
            input shapes): its first lowering then writes the plain bytecode,
            else its second one does.
    """

    def __init__(self, portable: Callable[[], bytes],
                 standard_form: Callable[[Any], Any | None] | None = None, *,
                 polymorphic: bool = True) -> None:
        self._portable = portable
        self._standard_form = standard_form
        self._lock = threading.Lock()
        self._plain: bytes | None = None
        self._write_plain = polymorphic  # whether the next deserialization writes the plain bytecode

    def module_in(self, context: Any) -> Any:
        """A new ``ir.Module`` of the function in ``context``, for the caller to consume."""
        with self._lock:
            if self._plain is not None:
                return ir.Module.parse(self._plain, context=context)
            portable = self._portable()
            module = read_module(portable, context)
            if self._standard_form is not None and MARKER in portable:
                standard = self._standard_form(module)
                if standard is not None:
                    self._plain = _bytecode(standard.operation)
                    return ir.Module.parse(self._plain, context=context)
            if self._write_plain:
                self._plain = _bytecode(module.operation)
            self._write_plain = True
            return module


def _bytecode(operation: Any) -> bytes:
    """``operation`` written as MLIR bytecode of this jaxlib (not a portable artifact)."""
    out = io.BytesIO()
    operation.write_bytecode(file=out)
    return out.getvalue()
