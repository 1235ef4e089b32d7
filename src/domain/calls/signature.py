"""What a caller of a function gives and gets: abstract values (:class:`AvalRecord`), one :class:`Signature`.

A :class:`Signature` is all that the call front (:mod:`.front`) checks a
call against: the function's name, the caller's ``(args, kwargs)`` pytree
and the result's (:mod:`.trees`), each flat input's and output's dtype and
shape (:class:`AvalRecord`, dimensions as on the wire: ``"4"``, ``"b"``,
``"2*a + b"``), the symbolic constraints, and how many weights a runtime
binds ahead of the caller's arguments. An export's record carries one
(:attr:`jaxport.domain.artifact.record.ArtifactRecord.signature`), and so
does each function of a converted directory's manifest
(:class:`jaxport.domain.converted.manifest.ConvertedFunction`): one type,
whatever runs the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .trees import TreeSpec
from .wire_names import input_wire_names, output_wire_names


class DType(Enum):
    """Every element type the artifact format knows; values are JAX's dtype names."""

    BOOL = "bool"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    UINT64 = "uint64"
    FLOAT16 = "float16"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    COMPLEX64 = "complex64"
    COMPLEX128 = "complex128"
    BFLOAT16 = "bfloat16"
    INT4 = "int4"
    UINT4 = "uint4"
    FLOAT8_E4M3B11FNUZ = "float8_e4m3b11fnuz"
    FLOAT8_E4M3FN = "float8_e4m3fn"
    FLOAT8_E4M3FNUZ = "float8_e4m3fnuz"
    FLOAT8_E5M2 = "float8_e5m2"
    FLOAT8_E5M2FNUZ = "float8_e5m2fnuz"
    FLOAT0 = "float0"
    FLOAT8_E4M3 = "float8_e4m3"
    FLOAT8_E3M4 = "float8_e3m4"
    FLOAT8_E8M0FNU = "float8_e8m0fnu"
    FLOAT4_E2M1FN = "float4_e2m1fn"
    KEY_FRY = "key<fry>"
    KEY_RBG = "key<rbg>"
    KEY_UNSAFE_RBG = "key<urbg>"


class MemorySpace(Enum):
    """Where an array lives (artifacts from before 2025-11 record none: device)."""

    DEVICE = "device"
    HOST = "host"
    ANY = "any"


@dataclass(frozen=True, slots=True)
class AvalRecord:
    """The abstract value of one flat argument or result.

    Attributes:
        shape: one string per dimension, as on the wire: ``("4", "b", "2*a + b")``.
        dtype: the element type.
        memory_space: where the array lives.
        weak_type: whether JAX treats the dtype as weak (a Python scalar's):
            format generation 13 (JAX 0.12.1) records it; older generations
            write every aval strong, and their readers read it so.
        variant: tells apart avals that are equal on the wire but that the
            writer kept as separate entries of its table of unique avals
            (JAX does so for avals that carry different explicit shardings,
            and, before generation 13, for a weak-typed and a strong-typed
            ``f32[]``). The writer de-duplicates whole records, so avals with
            different variants get separate entries; the reader numbers
            wire-equal entries 0, 1, ... in table order (the order of first
            use), so that writing a record read from bytes reproduces the
            same bytes. 0 otherwise.

    >>> str(AvalRecord(("b", "4"), DType.FLOAT32))
    'float32[b,4]'
    """

    shape: tuple[str, ...]
    dtype: DType
    memory_space: MemorySpace = MemorySpace.DEVICE
    weak_type: bool = False
    variant: int = 0

    def __str__(self) -> str:
        space = "" if self.memory_space is MemorySpace.DEVICE else f"<{self.memory_space.value}>"
        return f"{self.dtype.value}{space}[{','.join(self.shape)}]"


@dataclass(frozen=True, slots=True)
class Signature:
    """What a caller of one function gives and gets; calls are checked against it.

    Attributes:
        name: the function's name (messages name it).
        in_tree: the caller's ``(args, kwargs)`` pytree (weights a runtime binds left out).
        in_avals, out_avals: each flat input's and output's dtype and shape.
        out_tree: the result's pytree.
        constraints: the symbolic constraints (``"b >= 16"``).
        nr_weights: how many leading flat inputs of the exported function are
            weights that the runtime binds, left out of ``in_tree`` and
            ``in_avals`` (0: none; an export's own signature binds none).

    >>> leaf = TreeSpec.leaf()
    >>> sig = Signature("f", TreeSpec.of_tuple(TreeSpec.of_tuple(leaf), TreeSpec.of_dict({"scale": leaf})),
    ...                 (AvalRecord(("b", "4"), DType.FLOAT32), AvalRecord((), DType.FLOAT32)),
    ...                 TreeSpec.of_dict({"y": leaf}), (AvalRecord(("b",), DType.FLOAT32),))
    >>> sig.input_names, sig.output_names, sig.is_symbolic
    (('arg0', 'scale'), ('y',), True)
    """

    name: str
    in_tree: TreeSpec
    in_avals: tuple[AvalRecord, ...]
    out_tree: TreeSpec
    out_avals: tuple[AvalRecord, ...]
    constraints: tuple[str, ...] = ()
    nr_weights: int = 0

    @property
    def input_names(self) -> tuple[str, ...]:
        """The wire name of each flat input (:mod:`.wire_names`)."""
        return input_wire_names(self.in_tree)

    @property
    def output_names(self) -> tuple[str, ...]:
        """The wire name of each flat output (:mod:`.wire_names`)."""
        return output_wire_names(self.out_tree)

    @property
    def weak_typed(self) -> tuple[str, ...]:
        """The wire names of the inputs, then the outputs, whose dtype is weak (a Python scalar's):
        what readers before format generation 13 (JAX 0.12.1) read as strong."""
        return tuple(name for names, avals in ((self.input_names, self.in_avals), (self.output_names, self.out_avals))
                     for name, aval in zip(names, avals) if aval.weak_type)

    @property
    def is_symbolic(self) -> bool:
        """Whether a dimension of an input is symbolic."""
        return any(not d.isdigit() for a in self.in_avals for d in a.shape)
