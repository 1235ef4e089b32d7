"""What an artifact from elsewhere must satisfy before it is called: verification's policy.

One idea at two levels: this module decides, :mod:`jaxport.application.verify_artifact`
(the service of the same name) gathers the facts and runs the decision.

A verifying process (an adapter) parses each module of an artifact, checks it
with MLIR's verifier and reports :class:`ModuleFacts`: the types of ``main``'s
arguments and results and every custom-call target. This module decides on
those facts, against the artifact's record:

* ``main``'s types are those the record implies (:func:`check_main_types`, see
  :class:`~.calling_convention.MainArguments`): the platform index (an ``i32``
  scalar when there are several platforms), one ``!stablehlo.token`` per
  ordered effect, then the kept arrays with their dtypes and shapes (a
  symbolic dimension is dynamic, a constant one equal); the results are the
  tokens then the outputs;
* every custom call is to a target JAX guarantees stable, or named by the
  *consumer* in ``allowed_custom_calls``; the artifact's own disabled checks
  do not count (any artifact can claim any target is allowed).

A :class:`Verdict` is what is remembered per artifact digest.

>>> check_custom_calls(("lapack_sgeqrf_ffi", "my_kernel"), allowed=())
('custom call to \\'my_kernel\\' is not allowed: it is not a target JAX guarantees stable; pass allowed_custom_calls=("my_kernel",) to accept it',)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, DType
from jaxport.domain.artifact.calling_convention import MainArguments
from jaxport.domain.artifact.custom_calls import ALLOW_ALL, GUARANTEED_STABLE_TARGETS, HOST_CALLBACK_TARGETS
from jaxport.domain.errors import ArtifactError
from jaxport.domain.calls.front import dimension_variables

#: Bumped when the checks change, so that remembered verdicts are not reused.
VERIFIER_VERSION: Final = 1
#: Bounds on what a verifying process may report (checked before use).
MAX_FACTS_BYTES: Final = 64 << 20
MAX_TYPES: Final = 1 << 16
MAX_RANK: Final = 256
MAX_TARGETS: Final = 1 << 16

TOKEN: Final = "!stablehlo.token"

_ELEMENT_TYPES: Final = {
    DType.BOOL: "i1", DType.INT8: "i8", DType.INT16: "i16", DType.INT32: "i32",
    DType.INT64: "i64", DType.UINT8: "ui8", DType.UINT16: "ui16", DType.UINT32: "ui32",
    DType.UINT64: "ui64", DType.FLOAT16: "f16", DType.FLOAT32: "f32", DType.FLOAT64: "f64",
    DType.COMPLEX64: "complex<f32>", DType.COMPLEX128: "complex<f64>", DType.BFLOAT16: "bf16",
    DType.INT4: "i4", DType.UINT4: "ui4", DType.FLOAT8_E4M3B11FNUZ: "f8E4M3B11FNUZ",
    DType.FLOAT8_E4M3FN: "f8E4M3FN", DType.FLOAT8_E4M3FNUZ: "f8E4M3FNUZ",
    DType.FLOAT8_E5M2: "f8E5M2", DType.FLOAT8_E5M2FNUZ: "f8E5M2FNUZ", DType.FLOAT0: "i1",
    DType.FLOAT8_E4M3: "f8E4M3", DType.FLOAT8_E3M4: "f8E3M4",
    DType.FLOAT8_E8M0FNU: "f8E8M0FNU", DType.FLOAT4_E2M1FN: "f4E2M1FN",
}
_KEY_TYPES: Final = frozenset({DType.KEY_FRY, DType.KEY_RBG, DType.KEY_UNSAFE_RBG})


@dataclass(frozen=True, slots=True)
class MlirType:
    """One argument or result type of ``main``.

    Attributes:
        element: the element type (``"f32"``), or the whole type when it is
            not a ranked tensor (``"!stablehlo.token"``).
        shape: the dimensions, None for a dynamic one; None when not a tensor.
    """

    element: str
    shape: tuple[int | None, ...] | None

    def __str__(self) -> str:
        if self.shape is None:
            return self.element
        dims = "x".join("?" if d is None else str(d) for d in self.shape)
        return f"tensor<{dims}{'x' if dims else ''}{self.element}>"


@dataclass(frozen=True, slots=True)
class ModuleFacts:
    """What the verifying process found in one module.

    Attributes:
        inputs, results: the types of ``main``.
        custom_call_targets: the target of every custom call, in walk order.
        uses_shardy: whether an operation of the Shardy dialect (``sdy.``) is there.
        unfolded: (operation, dtype, source location) of each operation that the converters
            unfold (:mod:`jaxport.domain.targets.unfolded`), in walk order.
    """

    inputs: tuple[MlirType, ...]
    results: tuple[MlirType, ...]
    custom_call_targets: tuple[str, ...]
    uses_shardy: bool = False
    unfolded: tuple[tuple[str, str, str], ...] = ()

    def to_json(self) -> bytes:
        """The facts as JSON (what the verifying process sends)."""
        def types(ts: Sequence[MlirType]) -> list[Any]:
            return [[t.element, None if t.shape is None else list(t.shape)] for t in ts]
        unfolded = {"unfolded": [list(u) for u in self.unfolded]} if self.unfolded else {}
        return json.dumps({"inputs": types(self.inputs), "results": types(self.results),
                           "custom_calls": list(self.custom_call_targets),
                           "uses_shardy": self.uses_shardy, **unfolded}).encode()

    @staticmethod
    def from_json(data: bytes) -> ModuleFacts:
        """Parses and bounds-checks facts sent by a verifying process.

        Raises:
            ArtifactError: the report is malformed or exceeds the bounds.
        """
        if len(data) > MAX_FACTS_BYTES:
            raise ArtifactError(f"the verifier's report has {len(data)} bytes, over the limit")
        try:
            value = json.loads(data)
            inputs = _types(value["inputs"])
            results = _types(value["results"])
            targets = value["custom_calls"]
            if (not isinstance(targets, list) or len(targets) > MAX_TARGETS
                    or not all(isinstance(t, str) for t in targets)):
                raise ValueError("custom_calls must be a list of strings")
            unfolded = value.get("unfolded", [])
            if (not isinstance(unfolded, list) or len(unfolded) > MAX_TARGETS
                    or not all(isinstance(u, list) and len(u) == 3 and all(isinstance(v, str) for v in u)
                               for u in unfolded)):
                raise ValueError("unfolded must be a list of [operation, dtype, location] strings")
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise ArtifactError(f"the verifier's report is malformed: {exc}") from None
        return ModuleFacts(inputs, results, tuple(targets), value.get("uses_shardy") is True,
                           tuple((u[0], u[1], u[2]) for u in unfolded))


def _types(value: Any) -> tuple[MlirType, ...]:
    if not isinstance(value, list) or len(value) > MAX_TYPES:
        raise ValueError("a type list is not a list or is too long")
    out = []
    for item in value:
        element, shape = item
        if not isinstance(element, str):
            raise ValueError("an element type is not a string")
        if shape is not None and (not isinstance(shape, list) or len(shape) > MAX_RANK
                                  or not all(d is None or (isinstance(d, int) and d >= 0) for d in shape)):
            raise ValueError("a shape is not a list of sizes")
        out.append(MlirType(element, None if shape is None else tuple(shape)))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of verifying one artifact.

    Attributes:
        ok: whether every check passed.
        reasons: why not, one line each (empty when ``ok``).
    """

    ok: bool
    reasons: tuple[str, ...] = ()

    def to_json(self) -> bytes:
        """The verdict as JSON, for the verdict store."""
        return json.dumps({"version": VERIFIER_VERSION, "ok": self.ok,
                           "reasons": list(self.reasons)}).encode()

    @staticmethod
    def from_json(data: bytes) -> Verdict | None:
        """A remembered verdict, or None when it is unreadable or from another verifier version."""
        try:
            value = json.loads(data)
            if value["version"] != VERIFIER_VERSION or not isinstance(value["ok"], bool):
                return None
            reasons = tuple(str(r) for r in value["reasons"])
        except (ValueError, KeyError, TypeError, RecursionError):
            return None
        return Verdict(value["ok"], reasons)


def _expected(aval: AvalRecord) -> MlirType:
    shape = tuple(int(d) if d.isdigit() else None for d in aval.shape)
    return MlirType("ui32" if aval.dtype in _KEY_TYPES else _ELEMENT_TYPES[aval.dtype], shape)


def _matches(expected: MlirType, found: MlirType, *, key: bool) -> bool:
    if expected.shape is None or found.shape is None:
        return expected == found
    if expected.element != found.element:
        return False
    shape = found.shape[:len(expected.shape)] if key else found.shape
    return shape == expected.shape


def expected_main_types(record: ArtifactRecord) -> tuple[tuple[MlirType, ...], tuple[MlirType, ...]]:
    """The argument and result types that ``main`` of ``record`` must have."""
    layout = MainArguments.for_export(len(record.platforms), len(record.ordered_effects),
                                      record.module_kept_var_idx)
    tokens = (MlirType(TOKEN, None),) * layout.nr_tokens
    platform = (MlirType("i32", ()),) if layout.has_platform_index else ()
    inputs = platform + tokens + tuple(_expected(record.in_avals[i]) for i in layout.kept_var_idx)
    results = tokens + tuple(_expected(a) for a in record.out_avals)
    return inputs, results


def dimension_argument_count(record: ArtifactRecord) -> int:
    """How many dimension variables the record's input shapes hold.

    ``main`` of a module that ``jax.export`` wrote for dimensions it does not
    know (jaxport's) takes that many ``tensor<i32>`` arguments, one per
    variable, after the platform index (see ``adapters/mlir/dimension_args.py``).
    """
    try:
        return len(dimension_variables(record.signature))
    except ArtifactError:
        return 0


def check_main_types(record: ArtifactRecord, facts: ModuleFacts) -> tuple[str, ...]:
    """Every difference between ``main``'s types and those ``record`` implies.

    ``main`` may take the dimension variables as leading ``tensor<i32>``
    arguments (after the platform index): both forms are read alike.
    """
    inputs, results = expected_main_types(record)
    extra = len(facts.inputs) - len(inputs)
    if extra > 0 and record.uses_global_constants and extra == dimension_argument_count(record):
        start = int(len(record.platforms) > 1)
        dims = facts.inputs[start:start + extra]
        if all(d == MlirType("i32", ()) for d in dims):
            inputs = inputs[:start] + tuple(dims) + inputs[start:]
    nr_prefix = len(inputs) - len(record.module_kept_var_idx)
    keys = [False] * nr_prefix + [record.in_avals[i].dtype in _KEY_TYPES
                                  for i in record.module_kept_var_idx]
    out_keys = [False] * len(record.ordered_effects) + [a.dtype in _KEY_TYPES for a in record.out_avals]
    reasons = []
    for side, want, got, key in (("argument", inputs, facts.inputs, keys),
                                 ("result", results, facts.results, out_keys)):
        if len(want) != len(got):
            reasons.append(f"main of '{record.function_name}' has {len(got)} {side}s, but the "
                           f"record implies {len(want)}: ({', '.join(map(str, want))})")
            continue
        for i, (w, g, k) in enumerate(zip(want, got, key)):
            if not _matches(w, g, key=k):
                reasons.append(f"{side} {i} of main of '{record.function_name}' has type {g}, "
                               f"but the record implies {w}")
    return tuple(reasons)


def check_custom_calls(targets: Iterable[str], *, allowed: Iterable[str]) -> tuple[str, ...]:
    """The custom calls whose target is neither guaranteed stable nor in ``allowed``."""
    consumer = frozenset(allowed)
    reasons: list[str] = []
    for target in dict.fromkeys(targets):
        if ALLOW_ALL in consumer or target in consumer:
            continue
        if target in HOST_CALLBACK_TARGETS:
            reasons.append(f"custom call to '{target}' is a host callback into the exporting "
                           "Python process, which a loaded artifact cannot make")
        elif target not in GUARANTEED_STABLE_TARGETS:
            reasons.append(f"custom call to '{target}' is not allowed: it is not a target JAX "
                           f"guarantees stable; pass allowed_custom_calls=(\"{target}\",) to "
                           "accept it")
    return tuple(reasons)


def verdict(chain: Sequence[tuple[ArtifactRecord, ModuleFacts]], *, allowed: Iterable[str]) -> Verdict:
    """The verdict over each table of a VJP chain and the facts of its module."""
    allowed = tuple(allowed)
    reasons: list[str] = []
    for level, (record, facts) in enumerate(chain):
        prefix = "" if level == 0 else f"VJP of order {level}: "
        reasons += [prefix + r for r in (*check_main_types(record, facts),
                                         *check_custom_calls(facts.custom_call_targets, allowed=allowed))]
    return Verdict(not reasons, tuple(reasons))


def verdict_key(kind: str, digest: str, *depends_on: object) -> str:
    """The name a verdict is remembered under, the one scheme of the verdict store.

    Args:
        kind: what was checked, with the version of its checks (``"v1"``: an
            artifact; ``"c1"``: a converted directory; ``"f1"``: a file found to
            have its manifest's digest), bumped when what the verdict covers changes.
        digest: the hex SHA-256 of what was checked.
        depends_on: everything else the verdict depends on (JSON values: the
            allowed custom calls, the parser's version, the runtimes installed).

    >>> verdict_key("v1", "ab", ["x"], "jaxlib 1") == verdict_key("v1", "ab", ["x"], "jaxlib 2")
    False
    """
    extra = json.dumps(depends_on, separators=(",", ":"))
    return f"{kind}-{digest}-" + hashlib.sha256(extra.encode()).hexdigest()[:16]
