"""The ONNX target: what it refuses, and its options.

A function becomes one ``FUNCTION.onnx`` of any size (its dimension
variables stay ``dim_param``s; the call front checks the constraints, which
ONNX cannot state), read by ONNX Runtime on the CPU. The translation runs a
multi-platform artifact's CPU branch, erases JAX's ``shape_assertion`` (and
GSPMD's ``Sharding`` constraint of a module for one device), computes the
LAPACK kernels of :data:`LAPACK_TRANSLATED` and refuses every other custom
call, ordered effects, modules for several devices, and
the dtypes ONNX cannot hold (complex, float8, int4); bfloat16 is computed
in float32 inside the graph (ONNX Runtime's CPU provider has no bfloat16
kernels), as XLA does on the CPU, and the caller passes and gets bfloat16
arrays. An operation without
exact translation is refused by the converter, by name and source location.
Its ``target_details`` are the newest opset of its models, the IR version, the producer, the
``onnx`` version that wrote the files and each function's dim params.

ONNX Runtime Web (``convert --web``) has a tensor type for every dtype the
ONNX target writes but ``bfloat16``: a page could neither pass nor read one.
``--web`` refuses a function with a ``bfloat16`` input or output before
anything is written (the plan's refusal, run by the pipeline before the
converter imports ``onnx``), naming the argument or result; inside a function
``bfloat16`` is the ONNX target's business (computed in float32).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from jaxport.domain.artifact.record import ArtifactRecord, DType
from jaxport.domain.calls.front import leaf_paths, result_paths
from jaxport.domain.calls.signature import Signature
from jaxport.domain.converted.numerics import Tolerance
from jaxport.domain.converted.quantization import (
    INT4_WEIGHTS, INT8, INT8_DYNAMIC, INT8_WEIGHTS, check_mode, parse_tolerance)
from jaxport.domain.errors import ConversionError, UsageError
from .dtypes import BOOL_AND_INTEGERS
from jaxport.domain.generation.genai import DETAILS_KEY as GENAI_KEY, describe_genai
from .plan import BFloat16, DtypeTable, TargetPlan
from .unfolded import ELEMENTWISE_KERNELS


#: The opsets the translation writes: 21 (the default, what onnxruntime-web reads) to 26.
OPSETS = range(21, 27)
#: The newest opset an operation's translation needs (``BitCast``, opset 26: ``bitcast_convert``,
#: ``reduce_precision``, a total order of NaNs of either sign); ONNX Runtime 1.32 and onnxruntime-web
#: 1.30 run it.
NEWEST_OPSET = 26
#: The ONNX IR versions it writes: 10 (the default; onnxruntime-web 1.30 reads up to 13).
IR_VERSIONS = range(10, 14)
#: The defaults: what ONNX Runtime 1.31 and later and onnxruntime-web read.
DEFAULT_OPSET, DEFAULT_IR_VERSION = 21, 10
#: The metadata entries of a model naming its bfloat16 inputs and outputs: float32 at the graph's
#: boundary (ONNX Runtime's Python API takes no bfloat16 arrays), converted by the runtime adapter.
BFLOAT16_INPUTS, BFLOAT16_OUTPUTS = "jaxport.bfloat16_inputs", "jaxport.bfloat16_outputs"

#: The quantizations the translation offers (:mod:`jaxport.domain.converted.quantization`): the weights
#: of matrix products and embedding gathers as int8 per output channel (activations float32, or quantized
#: per call: int8-dynamic), or as int4 in blocks of 32; and static int8 (the products' activations too,
#: calibrated).
QUANTIZATIONS = (INT8_WEIGHTS, INT8_DYNAMIC, INT4_WEIGHTS, INT8)
#: The weights of an int4 model are quantized in blocks of this many along the reduction.
INT4_BLOCK = 32

ONNX_DTYPES = BOOL_AND_INTEGERS | {DType.FLOAT16, DType.BFLOAT16, DType.FLOAT32, DType.FLOAT64}


@dataclass(frozen=True, slots=True)
class OnnxOptions:
    """How to write ONNX.

    Attributes:
        opset: the ``ai.onnx`` opset of the models (one of :data:`OPSETS`), and the newest one a model may
            need (an operation that needs a newer one is refused, naming it); None: each model at
            :data:`DEFAULT_OPSET`, or at the opset its operations need (up to :data:`NEWEST_OPSET`).
        ir_version: their ONNX IR version (one of :data:`IR_VERSIONS`).
        web: also write ``jaxport.mjs``, the ES module that loads the directory
            in a web page with ONNX Runtime Web (``convert --web``); refuses a
            function with a bfloat16 input or output (:func:`check_web_signature`).
        quantize: None (as exported) or one of :data:`QUANTIZATIONS`.
        tolerance: the golden examples' tolerance of a quantized conversion in place of the mode's
            (:func:`~jaxport.domain.converted.quantization.parse_tolerance`: also ``"RTOL[,ATOL]"``).
        keep_float: glob patterns over the weights' paths in the bundle (``blocks/*/fc``): the weights
            they match stay in float.
        auto: keep in float, greedily from the largest measured contribution, the fewest weights
            that let the golden examples pass the tolerance.

    Raises:
        UsageError: an opset or IR version out of range, ``web`` or ``auto`` not a boolean, a
            quantization ONNX lacks, a tolerance that is not one, or a tolerance, ``keep_float`` or
            ``auto`` without a quantization.
    """

    target: ClassVar[str] = "onnx"
    opset: int | None = None
    ir_version: int = DEFAULT_IR_VERSION
    web: bool = False
    quantize: str | None = None
    tolerance: Tolerance | None = None
    keep_float: tuple[str, ...] = ()
    auto: bool = False

    def __post_init__(self) -> None:
        check_mode("ONNX", self.quantize, QUANTIZATIONS)
        for name in ("web", "auto"):
            value = getattr(self, name)
            if isinstance(value, str) and value.strip().lower() in ("true", "false"):  # from --option web=true
                object.__setattr__(self, name, value := value.strip().lower() == "true")
            if not isinstance(value, bool):
                raise UsageError(f"{name} {value!r} is not True or False")
        object.__setattr__(self, "tolerance", parse_tolerance(self.tolerance, self.quantize))
        if isinstance(self.keep_float, str):
            object.__setattr__(self, "keep_float", (self.keep_float,))
        if self.auto and self.quantize is None:
            raise UsageError("auto applies to a quantized conversion: give quantize=MODE (--quantize MODE) too")
        for name, allowed in (("opset", OPSETS), ("ir_version", IR_VERSIONS)):
            value = getattr(self, name)
            if isinstance(value, str) and value.strip().isdigit():  # from --option opset=22
                object.__setattr__(self, name, value := int(value))
            if name == "opset" and value is None:
                continue
            if isinstance(value, bool) or value not in allowed:
                raise UsageError(f"{name} {value!r} is not one of {list(allowed)}")


def details_of(options: OnnxOptions, onnx_version: str, producer: str,
               dim_params: Mapping[str, Sequence[str]], weights_file: str = "", opset: int | None = None
               ) -> dict[str, Any]:
    """The ``target_details`` of a directory written with ``options`` by ``onnx_version``; a quantized
    one's also name its own weights file (``weights_file``, which its models read as external data).
    ``opset`` is the newest opset of its models (by default the options')."""
    written = opset if opset is not None else options.opset if options.opset is not None else DEFAULT_OPSET
    details = {"opset": written, "ir_version": options.ir_version, "onnx": onnx_version,
               "producer": producer, "dim_params": {f: list(p) for f, p in dim_params.items()}}
    if options.quantize is not None and weights_file:
        details["weights_file"] = weights_file
    return details


def describe(details: Mapping[str, Any]) -> str:
    """What ``jaxport inspect`` and ``jaxport convert`` say of an ONNX directory.

    >>> describe({"opset": 21, "ir_version": 10, "onnx": "1.23.2", "producer": "jaxport 0.1.0",
    ...           "dim_params": {"predict": ["b"], "loss": []}})
    'ONNX opset 21, IR version 10, written by jaxport 0.1.0 with onnx 1.23.2; dim params: predict (b), loss (none)'
    """
    params = details.get("dim_params", {})
    dims = ", ".join(f"{f} ({', '.join(p) or 'none'})" for f, p in params.items()) if isinstance(params, dict) else "?"
    genai = describe_genai(details.get(GENAI_KEY))
    return (f"ONNX opset {details.get('opset', '?')}, IR version {details.get('ir_version', '?')}, written by "
            f"{details.get('producer', '?')} with onnx {details.get('onnx', '?')}; dim params: {dims or 'none'}"
            + (f"; {genai}" if genai else ""))


#: The name refusals give the target.
WEB_TARGET = "ONNX Runtime Web"
#: The ES module that ``--web`` adds to a directory (listed in its manifest).
WEB_MODULE = "jaxport.mjs"


def check_web_signature(signature: Signature) -> None:
    """Checks that a page can pass every input and read every output of ``signature``.

    Raises:
        ConversionError: an input or output is ``bfloat16``; the message names
            the function and the argument (``args[0]``) or result (``out['y']``).
    """
    arrays = [*zip(leaf_paths(signature.in_tree), signature.in_avals),
              *zip(result_paths(signature.out_tree), signature.out_avals)]
    for where, aval in arrays:
        if aval.dtype is DType.BFLOAT16:
            raise ConversionError(
                WEB_TARGET, signature.name,
                "it is bfloat16, for which onnxruntime-web has no tensor type: export the function with "
                "float32 there (cast to bfloat16 inside it), or convert without --web", where=where)


def refuse_function(signature: Signature, record: ArtifactRecord, options: OnnxOptions) -> None:
    """ONNX's own refusal (the plan's ``refuse_function``): with ``web``, :func:`check_web_signature`.

    Raises:
        ConversionError: as :func:`check_web_signature`.
    """
    if options.web:
        check_web_signature(signature)


#: JAX's LAPACK kernels the translation computes with ONNX operators (a ``Loop`` each): Cholesky,
#: triangular solve, LU with partial pivoting, QR (Householder, and forming Q), the tridiagonal solve, in
#: float32 and float64; the symmetric eigendecomposition where only its eigenvalues are used (the
#: translation refuses it, with :data:`EIGENVECTOR_SIGNS`, where the eigenvectors are); the SVD's singular
#: values, a single row's or column's vectors, and the others' vectors where the function's results provably do
#: not depend on their signs (pinv, lstsq; elsewhere the translation refuses them, naming their signs).
LAPACK_TRANSLATED = frozenset(f"lapack_{t}{kernel}_ffi" for t in "sd"
                              for kernel in ("potrf", "trsm", "getrf", "geqrf", "orgqr", "gtsv", "syevd", "gesdd"))

#: Why the eigenvectors of ``eigh`` (``lapack_{s,d}syevd_ffi``) are refused where they are used.
EIGENVECTOR_SIGNS = (
    "a LAPACK kernel (eigh) whose convention ONNX operators cannot reproduce exactly: the signs of the "
    "eigenvectors, which follow the path of LAPACK's QL/QR sweeps (divide and conquer beyond 25 rows) and change "
    "with the rounding (one unit in the last place of one element flips some eigenvector's sign in about a quarter "
    "of random 20 by 20 matrices); only the eigenvalues convert (jnp.linalg.eigvalsh, eigh(...).eigenvalues)")

#: LAPACK kernels whose results ONNX cannot give as LAPACK's: kernel -> (what calls it, the convention).
_LAPACK_CONVENTIONS = {
    "heevd": ("eigh", "the signs of the eigenvectors as LAPACK's divide and conquer gives them"),
    "gesvd": ("svd", "the signs of the singular vectors as LAPACK gives them"),
    "geev": ("eig", "complex eigenvalues and eigenvectors, normalized as LAPACK's"),
    "sytrd": ("the tridiagonal reduction", "LAPACK's Householder reflectors"),
}


def lapack_convention(target: str) -> str | None:
    """Why ONNX refuses the LAPACK custom call ``target``: the convention it cannot match, else None.

    >>> lapack_convention("lapack_sgeev_ffi").split(": ")[0]
    'a LAPACK kernel (eig) whose convention ONNX operators cannot reproduce exactly'
    >>> lapack_convention("lapack_spotrf_ffi") is None
    True
    """
    kernel = target.removeprefix("lapack_")[1:].removesuffix("_ffi")
    if not target.startswith("lapack_") or kernel not in _LAPACK_CONVENTIONS:
        return None
    what, convention = _LAPACK_CONVENTIONS[kernel]
    return f"a LAPACK kernel ({what}) whose convention ONNX operators cannot reproduce exactly: {convention}"


PLAN = TargetPlan(
    runtime="ONNX",
    dtypes=DtypeTable(ONNX_DTYPES, keys_as_weights=False, bfloat16=BFloat16.FLOAT32_INSIDE),
    platforms=frozenset({"cpu"}),
    # GSPMD's sharding constraint, in a module for one device, is its operand's value.
    custom_calls=frozenset({"shape_assertion", "Sharding"}) | LAPACK_TRANSLATED | frozenset(ELEMENTWISE_KERNELS),
    describe=describe,
    refuse_function=refuse_function,
    custom_call_reason=lapack_convention,
)
