"""Errors of running converted functions on runtimes that compile ahead of time.

Loading refuses a directory compiled for another machine; a call for a size
that no module was compiled for is refused before anything runs. (What a
conversion refuses is a :class:`~jaxport.domain.errors.ConversionError`.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jaxport.domain.errors import CallError, JaxportError


class TargetMismatchError(JaxportError, ValueError):
    """Compiled modules made for another machine than this one.

    Attributes:
        compiled_for: what the modules were compiled for, in words.
        host: this machine, in words.
    """

    def __init__(self, path: str, compiled_for: str, host: str, missing: Sequence[str] = ()) -> None:
        self.compiled_for = compiled_for
        self.host = host
        lacks = f"; this CPU lacks {', '.join(missing)}" if missing else ""
        super().__init__(
            f"{path} was compiled for {compiled_for}, which this machine ({host}) cannot run"
            f"{lacks}. Convert the artifact again on this machine, or with a target it runs "
            "(jaxport convert --target-cpu / --target-triple).")


class UncompiledSizeError(CallError):
    """A call whose dimension variables take values that no compiled module was made for.

    Attributes:
        function: the function's name.
        variable: the first variable whose value no module has, with that value.
        compiled: the bindings compiled for, in order.
    """

    def __init__(self, function: str, variable: str, value: int,
                 compiled: Sequence[Mapping[str, int]]) -> None:
        self.function = function
        self.variable = variable
        self.compiled = tuple(dict(b) for b in compiled)
        listing = ", ".join(_binding_text(b) for b in self.compiled)
        super().__init__(
            f"No module of '{function}' was compiled for {variable} = {value}; it was compiled "
            f"for {listing}. Convert it again with this size in dims= (--dims "
            f"{function}:{variable}={value}).")


def _binding_text(binding: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(binding.items())) + "}"
