"""Array and signature specifications, in plain Python terms."""

from __future__ import annotations

from dataclasses import dataclass

from .symbolic.plan import Shape


@dataclass(frozen=True, slots=True)
class ArraySpec:
    """The abstract value of one flat argument or result.

    Attributes:
        shape: the dimensions.
        dtype: the NumPy-style dtype name (``"float32"``, ``"bfloat16"``, ``"bool"``).
        weak_type: whether JAX treats the dtype as weak (from a Python scalar).
    """

    shape: Shape
    dtype: str
    weak_type: bool = False

    @property
    def is_symbolic(self) -> bool:
        """Whether some dimension is symbolic."""
        return not all(isinstance(d, int) for d in self.shape)

    @property
    def ndim(self) -> int:
        """The rank."""
        return len(self.shape)

    def __str__(self) -> str:
        dims = ",".join(str(d) for d in self.shape)
        return f"{self.dtype}[{dims}]"
