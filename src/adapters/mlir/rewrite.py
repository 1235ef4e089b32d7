"""What the verifying process makes of a module it has just parsed and verified.

A request to the verifying process (:mod:`.worker_main`) may ask, besides the
facts, for one form of the module; the process makes it from the bytes it
accepted, so the calling process never parses a module to get it:

* ``standard``: a ``main`` that takes its dimension variables as
  ``jax.global_constant`` arguments wrapped to compute them
  (:func:`~.dimension_args.standard_form`; the request describes the
  record: :func:`standard_request`);
* ``version``: the module written for an older StableHLO (what a
  converter's runtime reads: TensorFlow's, for a SavedModel); with
  ``"strict": true`` (an artifact written for a consumer, ``consumer=``) a
  module that cannot be written so is refused (:class:`VersionRefused`)
  instead of left as it is;
* ``specialize``: the module specialised to static shapes and refined by
  JAX (:func:`~.specialize.specialize`, for IREE; :func:`specialize_request`).

Only the first and the last import JAX, and only in the verifying process.
The request builders here are pure: the calling process imports this module
without jaxlib.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jaxport.domain.artifact.kernels import Kernel
from jaxport.domain.artifact.producer import release_key
from jaxport.domain.artifact.module_format import STABLEHLO_TARGET_VERSION, stablehlo_version
from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, DType
from jaxport.domain.calls.front import leaf_paths, record_shapes
from jaxport.domain.converted.static_shapes import StaticShapes
from jaxport.domain.ports import ModuleWorker
from .dimension_args import MARKER, standard_form
from .serialization_form import MIXED_SERIALIZATION


def standard_request(record: ArtifactRecord) -> dict[str, Any] | None:
    """What the verifying process needs to give ``record``'s module the standard form, or None
    when the module cannot take dimension arguments (static inputs, or no marker in its bytes)."""
    if MARKER not in record.mlir_module_serialized or all(d.isdigit() for a in record.in_avals for d in a.shape):
        return None
    return {"function": record.function_name, "shapes": [list(a.shape) for a in record.in_avals],
            "constraints": list(record.constraints), "arg_paths": list(leaf_paths(record.in_tree)),
            "nr_tokens": len(record.ordered_effects), "kept_var_idx": list(record.module_kept_var_idx)}


def specialize_request(record: ArtifactRecord, shapes: StaticShapes, platform_index: int | None) -> dict[str, Any]:
    """What the verifying process needs to specialise ``record``'s module to ``shapes``."""
    return {"in": [a.dtype.value for a in record.in_avals], "out": [a.dtype.value for a in record.out_avals],
            "in_shapes": [list(s) for s in shapes.in_shapes], "out_shapes": [list(s) for s in shapes.out_shapes],
            "kept_var_idx": list(record.module_kept_var_idx), "refine": record.uses_global_constants,
            "platform_index": platform_index}


@dataclass(frozen=True, slots=True)
class ChildModuleForms:
    """The verifying process's forms of a module, for a converter (a
    :class:`~jaxport.domain.targets.ports.ModuleForms`)."""

    worker: ModuleWorker

    def for_version(self, module: bytes, version: str) -> bytes:
        """``module`` written for the older StableHLO ``version`` (see the port)."""
        return self._written(module, {"version": version})

    def written_for(self, module: bytes, version: str) -> bytes:
        """``module`` written for the older StableHLO ``version`` (itself when it is not newer),
        for a consumer that reads that version.

        Raises:
            ValueError: ``version`` lacks an operation the module uses (StableHLO's message names it).
            ArtifactError: the module does not parse or verify.
        """
        return self._written(module, {"version": version, "strict": True})

    def specialized(self, record: ArtifactRecord, shapes: StaticShapes, platform_index: int | None) -> bytes:
        """``record``'s module for ``shapes``, refined (see the port)."""
        form = {"specialize": specialize_request(record, shapes, platform_index)}
        return self.worker.check(record.mlir_module_serialized, sdy=MIXED_SERIALIZATION, form=form).reserialized

    def kernels(self, module: bytes, mosaic: int | None = None,
                text: bool = False) -> tuple[bytes, tuple[Kernel, ...]]:
        """``module``'s kernels, and the module with each Mosaic kernel newer than ``mosaic``
        written for it and, when ``text``, each Mosaic kernel written as MLIR text (itself when
        none is rewritten), by the verifying process.

        Raises:
            ValueError: a kernel does not parse, or this jaxlib cannot write it for ``mosaic``.
            ArtifactError: the module does not parse or verify.
        """
        checked = self.worker.check(module, sdy=False, form={"kernels": {"mosaic": mosaic, "text": text}})
        return checked.reserialized, checked.kernels

    def _written(self, module: bytes, form: dict[str, Any]) -> bytes:
        if not written_after(module, form["version"]):
            return module
        return self.worker.check(module, sdy=MIXED_SERIALIZATION, form=form).reserialized


def shared_forms() -> ChildModuleForms:
    """The forms that the process's one verifying process makes (:func:`~.worker.shared_worker`),
    for every caller: the services (handed them by the composition root) and ``Exported.serialize``."""
    from .worker import shared_worker  # the verifying process imports this module, and never needs it

    return ChildModuleForms(shared_worker())


def rewrite(module_bytes: bytes, request: Mapping[str, Any]) -> bytes | None:
    """The form of the (verified) module that ``request`` asks for, or None when it asks for none
    or the module has it already (then the plain re-serialization is the answer).

    Raises:
        ValueError: the record's shapes do not hold ``main``'s dimension arguments.
        RefinementRefused: JAX's refinement refused the shapes.
    """
    if "standard" in request:
        return _standard_bytes(module_bytes, request["standard"])
    if "version" in request:
        return _written_for(module_bytes, str(request["version"]), strict=bool(request.get("strict", False)))
    if "specialize" in request:
        return _specialized(module_bytes, request["specialize"])
    return None


class RefinementRefused(Exception):
    """JAX's shape refinement refused a module for the requested shapes."""


class VersionRefused(Exception):
    """A strict ``version`` request: the module uses an operation (or an attribute of one) that the
    older StableHLO lacks; the message is StableHLO's, naming it."""


def _written_for(module_bytes: bytes, version: str, *, strict: bool = False) -> bytes | None:
    """The module written for the older StableHLO ``version``; None when it is not older or (not
    ``strict``) this jaxlib cannot write it so (the runtime's own check then refuses the module with
    its reason).

    Raises:
        VersionRefused: ``strict``, and the module cannot be written for ``version``.
    """
    from . import bindings as jaxlib_mlir

    if not written_after(module_bytes, version):
        return None
    try:
        context = jaxlib_mlir.make_context()
        module = jaxlib_mlir.deserialize_portable_artifact(module_bytes, context)
        with context:
            return jaxlib_mlir.serialize_portable_artifact(module, version, MIXED_SERIALIZATION)
    except Exception as exc:  # a module using operations newer than `version`
        if strict:
            raise VersionRefused(_refusal(str(exc), version)) from None
        return None


def _refusal(message: str, version: str) -> str:
    """StableHLO's refusal to write a module for ``version``, shortened to the operation it names."""
    found = re.search(r"failed to legalize operation '(vhlo\.([a-z_0-9]+?)_v\d+)'", message)
    if found is None:
        return f"StableHLO {version} cannot express the module: {message.strip()[:600]}"
    return (f"the operation stablehlo.{found.group(2)} as the module uses it ({found.group(1)}, its "
            f"attributes included) does not exist in StableHLO {version}")


def _standard_bytes(module_bytes: bytes, form: Mapping[str, Any]) -> bytes | None:
    """The module of the dimension-argument form wrapped (written for its own version), else None."""
    from jaxport.adapters.jax.lowering.dims import JaxDim  # the shape assertions cite the installed JAX's pages

    from .bindings import serialize_portable_artifact
    from .module import read_module

    module = read_module(module_bytes)
    avals = [AvalRecord(tuple(s), DType.FLOAT32) for s in form["shapes"]]
    try:
        standard = standard_form(module, tuple(tuple(s) for s in record_shapes(avals, form["constraints"], expr_class=JaxDim)),
                                 tuple(form["arg_paths"]), nr_tokens=int(form["nr_tokens"]),
                                 kept_var_idx=tuple(form["kept_var_idx"]))
    except ValueError as exc:
        raise ValueError(f"function '{form['function']}': {exc}") from exc
    if standard is None:
        return None
    version = stablehlo_version(module_bytes[:300]) or STABLEHLO_TARGET_VERSION
    with standard.context:
        return serialize_portable_artifact(standard, version, MIXED_SERIALIZATION)


def _specialized(module_bytes: bytes, spec: Mapping[str, Any]) -> bytes:
    from .specialize import specialize

    shapes = StaticShapes((), tuple(tuple(s) for s in spec["in_shapes"]), tuple(tuple(s) for s in spec["out_shapes"]))
    try:
        return specialize(module_bytes, tuple(DType(d) for d in spec["in"]), tuple(DType(d) for d in spec["out"]),
                          tuple(spec["kept_var_idx"]), shapes, spec["platform_index"], refine=bool(spec["refine"]))
    except ValueError as exc:
        raise RefinementRefused(str(exc)) from exc


def written_after(module_bytes: bytes, version: str) -> bool:
    """Whether the portable artifact ``module_bytes`` was written for a StableHLO newer than ``version``."""
    written = stablehlo_version(module_bytes[:300])
    return written is not None and release_key(written) > release_key(version)
