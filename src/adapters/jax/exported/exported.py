"""The :class:`Exported` object: one export's record, its JAX objects, and what it can do.

What an export *is* lives in one frozen record,
:class:`~jaxport.domain.artifact.record.ArtifactRecord` (:attr:`Exported.record`),
and in the same export in JAX's terms,
:class:`~jaxport.adapters.jax.exported.jax_objects.JaxObjects`, made from one
another once (:mod:`.jax_objects` converts both ways). An export made in this
process starts from the JAX objects of its lowering (its module serialized
there, as ``jax.export`` does) and makes its record when first read, as
``jax.export`` converts when it serializes: so an export that the artifact
format cannot hold (a pytree node type not registered for serialization, a
dtype without a wire code) is exported and called like any other, and only
reading the record, as serializing does, fails. A deserialized export starts
from its record. The attributes that ``jax.export`` users read (``fun_name``,
``in_avals``...) are the JAX objects'; calling binds the ``jaxport_call``
primitive with :attr:`~Exported.call_target`, which holds them; serializing
encodes the record, then seals it; the VJPs are the record's (a loaded
artifact) or exported when first asked for (in this process).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import jax
from jax.core import ShapedArray
from jax.sharding import AbstractMesh, Mesh

from jaxport.adapters.jax.exported import autodiff as jax_autodiff  # noqa: F401  (registers the differentiation rules)
from jaxport.adapters.flatbuffers.codec import encode_artifact
from jaxport.adapters.jax.exported.call import (
    CALLER_ERRORS, CallTarget, bind, call_failure, check_dtypes, flat_arguments
)
from jaxport.adapters.jax.internals import is_eager, is_staging
from jaxport.adapters.jax.versions import this_producer
from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.artifact.calling_convention import donated_inputs
from jaxport.domain.errors import DonationError, ExportedFieldError, JaxportError, VjpUnavailableError
from jaxport.domain.artifact.integrity import Extension, seal
from jaxport.domain.artifact.module_format import check_portable_artifact
from jaxport.domain.artifact.platforms import normalize_platforms
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.adapters.jax.exported.fields import jax_objects_from_fields
from jaxport.adapters.jax.exported.jax_objects import JaxObjects, jax_objects_of
from jaxport.adapters.jax.records import hlo_sharding
from jaxport.adapters.jax.trees.registry import PytreeSerializationRegistry, default_registry
from jaxport.adapters.jax import placement
from jaxport.adapters.mlir.bindings import newest_readable_version
from jaxport.adapters.mlir.module import donated_arguments, module_text

_T = TypeVar("_T")


class _JaxField(property, Generic[_T]):
    """An attribute of :class:`Exported` under ``jax.export``'s name: its JAX objects' ``name``.

    A property whose getter is an ``operator.attrgetter`` (C code: as fast as a plain property).
    """

    def __init__(self, doc: str, name: str = "") -> None:
        super().__init__(doc=doc)
        self._name = name

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = self._name or name
        super().__init__(operator.attrgetter(f"_jax.{self._name}"), doc=self.__doc__)

    if TYPE_CHECKING:
        @overload
        def __get__(self, exported: None, owner: type | None = None) -> _JaxField[_T]: ...

        @overload
        def __get__(self, exported: Exported, owner: type | None = None) -> _T: ...

        def __get__(self, exported: Exported | None, owner: type | None = None) -> _T | _JaxField[_T]: ...


@dataclass(frozen=True, eq=False, repr=False, init=False)
class Exported:
    """A JAX function lowered to StableHLO, with its calling signature.

    It carries what ``jax.export.Exported`` carries, under the same names
    (``fun_name``, ``in_tree``, ``in_avals``, ``out_tree``, ``out_avals``,
    ``in_shardings_hlo``, ``nr_devices``, ``platforms``, ``ordered_effects``,
    ``disabled_safety_checks``, ``mlir_module_serialized``,
    ``calling_convention_version``, ``module_kept_var_idx``,
    ``uses_global_constants``...), plus the named shardings
    (``in_shardings``, ``out_shardings``) and :attr:`record`, what the export
    is in the artifact's terms (runtimes, bundles and tools read it).
    ``Exported(record)`` is the export of a record, whose JAX objects are
    made on first use; the other fields are private, as
    ``jax.export.Exported._get_vjp`` is (``dataclasses.replace(exp)`` gives a
    fresh object of the same export). ``Exported(fun_name=..., in_tree=...,
    ..., _get_vjp=...)`` takes instead the keyword fields of the installed
    JAX's ``jax.export.Exported``, as JAX's own tools build one
    (:mod:`.fields`; a bad field raises ``ExportedFieldError`` naming it).
    """

    #: What the export is made from: its record (its JAX objects are made from
    #: it on first use) or its JAX objects (its record is made from them on first read).
    _source: ArtifactRecord | JaxObjects
    _: KW_ONLY
    #: The pytree registry that rebuilds the trees of a record (default: the global one).
    _registry: PytreeSerializationRegistry | None = None
    #: Exports the VJP of this export (in-process exports); without it, the VJP is ``record.vjp``.
    _export_vjp: Callable[[Exported], Exported] | None = None
    #: Exports it vmapped over axis 0 of the flat arguments marked True, for one
    #: batch size (in-process exports).
    _export_batched: Callable[[tuple[bool, ...], int], Exported] | None = None
    #: Set on the VJP of a function with that many flat inputs (see :meth:`vjp`),
    #: for forward-mode differentiation.
    _vjp_of_arity: int | None = None

    def __init__(self, _source: ArtifactRecord | JaxObjects | None = None, *,
                 _registry: PytreeSerializationRegistry | None = None,
                 _export_vjp: Callable[[Exported], Exported] | None = None,
                 _export_batched: Callable[[tuple[bool, ...], int], Exported] | None = None,
                 _vjp_of_arity: int | None = None, **jax_fields: Any) -> None:
        if _source is None:
            _source, get_vjp = jax_objects_from_fields(jax_fields)
            _export_vjp = _export_vjp or get_vjp
        elif jax_fields:
            raise ExportedFieldError(next(iter(jax_fields)), "an Exported is made from a record or from "
                                                             "jax.export.Exported's fields, not both")
        for name, value in (("_source", _source), ("_registry", _registry), ("_export_vjp", _export_vjp),
                            ("_export_batched", _export_batched), ("_vjp_of_arity", _vjp_of_arity)):
            object.__setattr__(self, name, value)

    @property
    def record(self) -> ArtifactRecord:
        """What the export is, in the artifact's terms (for an in-process export, made on first read).

        Raises:
            ValueError, NonStringKeyError, EffectSerializationError: an
                in-process export that the artifact format cannot hold (see
                :meth:`serialize`).
        """
        source = self._source
        return source if isinstance(source, ArtifactRecord) else source.record

    @functools.cached_property
    def _jax(self) -> JaxObjects:
        source = self._source
        if isinstance(source, JaxObjects):
            return source
        return jax_objects_of(source, self._registry or default_registry())

    @classmethod
    def from_module(cls, module: bytes, *, in_specs: Sequence[Any], out_specs: Any,
                    platforms: Sequence[str], calling_convention_version: int,
                    nr_devices: int = 1, kwargs_specs: dict[str, Any] | None = None,
                    fun_name: str = "module",
                    disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Exported:
        """An :class:`Exported` for a serialized module recorded with its signature.

        This is how JAX's back-compatibility data records modules: the portable
        artifact, the argument and result specs, the platform and the calling
        convention. The module's ``main`` must take every argument (none was
        dropped as unused). The calling-convention version is recorded as given,
        without the window check that deserialization applies, so that modules
        recorded with older conventions (6, 7) can still be run.

        Args:
            module: the StableHLO portable artifact.
            in_specs: the positional arguments: a pytree of objects with ``shape``
                and ``dtype`` (``jax.ShapeDtypeStruct``, NumPy arrays).
            out_specs: the results, a pytree of the same kind.
            platforms: the platforms the module was lowered for.
            calling_convention_version: the convention of its ``main``.
            nr_devices: the number of devices it was lowered for.
            kwargs_specs: keyword arguments, if ``main`` takes some.
            fun_name: a name for messages.
            disabled_checks: safety checks to skip when calling.

        Raises:
            ArtifactError: ``module`` is not a StableHLO portable artifact.
        """
        check_portable_artifact(module, newest_readable=newest_readable_version())

        def aval(spec: Any) -> ShapedArray:
            return ShapedArray(tuple(spec.shape), spec.dtype)

        tree_map = jax.tree_util.tree_map
        in_avals, in_tree = jax.tree_util.tree_flatten(
            (tuple(tree_map(aval, tuple(in_specs))), tree_map(aval, dict(kwargs_specs or {}))))
        out_avals, out_tree = jax.tree_util.tree_flatten(tree_map(aval, out_specs))
        plats = normalize_platforms(platforms)
        symbolic = any(not all(isinstance(d, int) for d in a.shape) for a in in_avals)
        return cls(JaxObjects(
            fun_name=fun_name, in_tree=in_tree, in_avals=tuple(in_avals), out_tree=out_tree,
            out_avals=tuple(out_avals), in_shardings=(None,) * len(in_avals),
            out_shardings=(None,) * len(out_avals), nr_devices=nr_devices, platforms=plats,
            ordered_effects=(), unordered_effects=(), disabled_safety_checks=tuple(disabled_checks),
            mlir_module_serialized=bytes(module), calling_convention_version=calling_convention_version,
            module_kept_var_idx=tuple(range(len(in_avals))), uses_global_constants=symbolic or len(plats) > 1))

    def has_vjp(self) -> bool:
        """Whether :meth:`vjp` can provide the exported VJP."""
        return self._export_vjp is not None or self.record.has_vjp

    def vjp(self) -> Exported:
        """The exported VJP of this function.

        It takes the flat primal arguments followed by one cotangent per flat
        primal output, and returns the cotangents of the flat primal inputs.

        Raises:
            VjpUnavailableError: this object carries no VJP.
        """
        if not self.has_vjp():
            raise VjpUnavailableError(
                f"No VJP is available for the exported function '{self.fun_name}'. "
                "Export it in this process with jaxport.export, or serialize it with "
                "serialize(vjp_order=1) (or higher) before deserializing.")
        return self._vjp

    @functools.cached_property
    def _vjp(self) -> Exported:
        """The VJP, exported (in this process) or read from the record, once per object."""
        arity = len(self.in_avals)
        if self._export_vjp is None:
            assert self.record.vjp is not None
            return exported_of(self.record.vjp, self._registry, vjp_of_arity=arity)
        vjp = self._export_vjp(self)
        if not isinstance(vjp, Exported):
            raise ExportedFieldError("_get_vjp", f"gave {type(vjp).__name__}, not a jaxport.Exported")
        return dataclasses.replace(vjp, _vjp_of_arity=arity)

    def serialize(self, vjp_order: int = 0, *, integrity: bool = True, consumer: str | None = None) -> bytearray:
        """The artifact bytes, in ``jax.export``'s format (jax 0.10.2): the record, encoded, then sealed.

        By default the flatbuffer is followed by the jaxport trailer: a digest
        that :func:`jaxport.deserialize` checks before parsing anything, and
        the symbolic constraints, which ``jax.export``'s format drops, and the
        versions that wrote it. ``jax.export.deserialize`` reads these bytes
        too (it ignores the trailer).

        Args:
            vjp_order: how many orders of VJP to include, for differentiating
                the deserialized function (2 allows ``jax.grad(jax.grad(f))``).
            integrity: False gives exactly the bytes ``jax.export``'s
                ``serialize()`` writes: no digest, constraints or versions.
            consumer: ``RUNTIME==VERSION`` (``"jax==0.9.2"``, ``"tf==2.21"``): write
                what that release reads (each module for its StableHLO, by the
                verifying process; the format version its reader knows), so that
                ``jaxport check --consumer`` accepts the bytes. None: as JAX here writes.

        Raises:
            VjpUnavailableError: this object cannot provide VJPs of that order.
            ValueError: its pytrees hold a node type not registered for
                serialization, or an array of a dtype the format cannot hold.
            NonStringKeyError: its pytrees hold a dict with a key that is not a
                string (a ``TypeError``); the message names the key path.
            EffectSerializationError: an effect that its class cannot rebuild.
            UsageError: ``consumer`` is malformed or not in jaxport's table of consumers.
            ConsumerMismatchError: that consumer would not read or run the artifact.
        """
        record = self._record_with_vjps(vjp_order)
        # What only this needs, imported here: the consumers' table is 12 ms under -X importtime on a busy
        # 2-core machine, which a load never pays (tests/e2e/test_load_path_imports.py).
        if consumer is not None:
            from jaxport.adapters.mlir.rewrite import shared_forms
            from jaxport.domain.artifact.consumers import find_consumer, written_for

            # The domain decides; the verifying child writes each module for the consumer's StableHLO
            # and each Pallas kernel for its Mosaic.
            forms = shared_forms()
            record = written_for(record, find_consumer(consumer), forms.written_for, forms.kernels,
                                 writer_jax=jax.__version__)
        flatbuffer = encode_artifact(record)
        if not integrity:
            return flatbuffer
        return seal(flatbuffer, Extension(tuple(table.constraints for table in record.chain), this_producer()))

    def _record_with_vjps(self, vjp_order: int) -> ArtifactRecord:
        """The record with the records of its VJPs up to ``vjp_order`` nested, and no further.

        Raises:
            VjpUnavailableError: this object cannot provide VJPs of that order.
        """
        if vjp_order < 0:
            raise ValueError(f"vjp_order must be >= 0, got {vjp_order}")
        chain = [self]
        while len(chain) <= vjp_order:
            if not chain[-1].has_vjp():
                raise VjpUnavailableError(
                    f"Cannot serialize '{self.fun_name}' with vjp_order={vjp_order}: it carries VJPs "
                    f"up to order {len(chain) - 1} only. Serialize the in-process export, or load an "
                    "artifact that was serialized with a vjp_order at least that high.")
            chain.append(chain[-1].vjp())
        vjp: ArtifactRecord | None = None
        for link in reversed(chain):
            record = link.record
            vjp = record if record.vjp is vjp else dataclasses.replace(record, vjp=vjp)
        assert vjp is not None
        return vjp

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the exported function, eagerly or from inside a JAX transformation.

        The arguments must have the pytree structure, ranks, dtypes and
        constant dimensions that the function was exported for. An eager call
        takes JAX's C++ dispatch path (one cache lookup, no Python tracing)
        after the first call with a given signature; while a jaxpr is being
        staged (``jax.jit``, ``jax.eval_shape``, export) the primitive joins
        the caller's trace directly. The primitive's own rules differentiate
        and batch it (:mod:`jaxport.adapters.jax.exported.autodiff`, :mod:`jaxport.adapters.jax.exported.call`).

        Raises:
            TreeMismatchError, RankMismatchError, DtypeMismatchError,
            ShapeMismatchError, PlatformMismatchError: the call does not match
                the export; the message names the argument path.
            ArtifactCallError: the module failed below jaxport (while being
                lowered, compiled or run by XLA); the message names the
                function and keeps XLA's (also a ``jax.errors.JaxRuntimeError``
                when XLA raised one).
        """
        try:
            if is_staging():
                return self._call_traced(*args, **kwargs)
            return self._caller(*args, **kwargs)
        except Exception as exc:
            self._explain_failure(exc, args, kwargs)
            raise

    def _explain_failure(self, exc: Exception, args: Any, kwargs: Any) -> None:
        """Raises the error that explains why a call failed with ``exc``; returns when ``exc`` does."""
        if isinstance(exc, TypeError):
            # jax.jit refuses non-array leaves (e.g. a static argument passed
            # again, an array of strings) before the tree check runs: report
            # the tree difference, or the leaf whose dtype differs.
            check_dtypes(self.call_target, flat_arguments(self.fun_name, self.in_tree, args, kwargs))
        elif not isinstance(exc, (JaxportError, *CALLER_ERRORS)):
            raise call_failure(self.fun_name, exc) from exc

    def donating_call(self) -> Callable[..., Any]:
        """The call of this export that donates the inputs its module donates.

        ``jax.export``'s ``call`` never donates: its inputs stay alive, even
        when the function was exported from ``jax.jit(f, donate_argnums=...)``
        and its module aliases them to results (``tf.aliasing_output``).
        :meth:`call` keeps that. The call returned here, made once per
        object, takes the same arguments as :meth:`call` and, when called
        eagerly, donates each input that the module donates, so XLA writes
        the results into their buffers and the arrays given are deleted (a
        NumPy array given is copied to the device first and stays alive).
        Inside a ``jax.jit``, that jit's ``donate_argnums`` governs, as for any
        function it calls; under another transformation (``jax.grad``,
        ``jax.vmap``), which may need the inputs again, it is :meth:`call`. A method that returns a call, not a keyword of
        :meth:`call`, because :meth:`call`'s keyword arguments are the
        function's own (as ``jax.export``'s are).

        Raises:
            DonationError: the module donates none of its inputs (it was
                exported without ``donate_argnums``, or none of its results
                can hold a donated input).
        """
        return self._donating_caller

    @functools.cached_property
    def _donating_caller(self) -> Callable[..., Any]:
        donated = donated_inputs(donated_arguments(self.mlir_module_serialized),
                                 self.module_kept_var_idx)
        if not donated:
            raise DonationError(
                f"The exported function '{self.fun_name}' donates none of its inputs, so it has no donating "
                "call: export it from jax.jit(f, donate_argnums=...) to donate, or call it with .call")
        target, in_tree, out_tree = self.call_target, self.in_tree, self.out_tree

        def flat(*leaves: Any) -> list[Any]:
            return bind(target, leaves)

        flat.__name__ = f"call_exported_{self.fun_name}"
        jitted = jax.jit(flat, donate_argnums=donated)

        def call(*args: Any, **kwargs: Any) -> Any:
            if not is_eager():  # the plain call: a transformation's own trace decides (see above)
                return self.call(*args, **kwargs)
            try:
                return out_tree.unflatten(jitted(*flat_arguments(self.fun_name, in_tree, args, kwargs)))
            except Exception as exc:
                self._explain_failure(exc, args, kwargs)
                raise

        return call

    def _call_traced(self, *args: Any, **kwargs: Any) -> Any:
        """The pytree-level call: the tree check, then the primitive bound on the leaves."""
        leaves = flat_arguments(self.fun_name, self.in_tree, args, kwargs)
        return self.out_tree.unflatten(bind(self.call_target, leaves))

    def _jitted_call(self) -> Callable[..., Any]:
        """A new ``jax.jit`` of :meth:`_call_traced`, named after the function."""
        def call(*args: Any, **kwargs: Any) -> Any:
            return self._call_traced(*args, **kwargs)

        call.__name__ = f"call_exported_{self.fun_name}"
        return jax.jit(call)

    @functools.cached_property
    def _caller(self) -> Callable[..., Any]:
        return self._jitted_call()

    @functools.cached_property
    def call_target(self) -> CallTarget:
        """What the ``jaxport_call`` primitive is bound with: this export's JAX objects, hashed by identity."""
        export_batched = self._export_batched
        batched = None if export_batched is None else lambda axes, size: export_batched(axes, size).call_target
        vjp = (lambda: self.vjp().call_target) if self.has_vjp() else None
        return CallTarget(self._jax, vjp=vjp, vjp_of_arity=self._vjp_of_arity, batched=batched)

    def warm(self, *args_specs: Any, **kwargs_specs: Any) -> str:
        """Compiles the eager call for these specs into JAX's persistent compilation cache.

        A deployment step can run it before traffic arrives, so that the
        first call of a later process loads the executable from JAX's cache
        instead of compiling it (see the guide's "Cold start and JAX's
        compilation cache"). The cache is JAX's, configured as JAX users
        configure it (``JAX_COMPILATION_CACHE_DIR``, or
        ``jax.config.update("jax_compilation_cache_dir", ...)`` before the
        process's first compilation); this method changes none of JAX's
        settings (the ``jaxport warm`` command, a process that only warms,
        lowers JAX's write thresholds for itself: see its help).

        Args:
            *args_specs, **kwargs_specs: the arguments to compile for, as
                ``jax.ShapeDtypeStruct`` or arrays, in the exported pytree;
                by default the exported avals (only when they are static).

        Returns:
            The directory of JAX's compilation cache that now holds the call.

        Raises:
            CacheConfigError: no compilation cache is configured, or JAX did
                not write the entry (its ``jax_persistent_cache_min_*``
                thresholds, or a cache JAX does not use in this process); the
                message names the setting to change.
            CallError: no specs were given and some exported dimension is symbolic.
            TreeMismatchError, ShapeMismatchError, ...: the specs do not match the export.
        """
        # Imported here: loading and calling never warm (with JAX's cache adapter, 1.1 ms of a fresh
        # first answer under -X importtime; tests/e2e/test_load_path_imports.py).
        from jaxport.adapters.jax.exported.warm import warm

        return warm(self._jax, self._jitted_call(), args_specs, kwargs_specs)


    @property
    def fun_name(self) -> str:
        """The name of the exported function, for messages (read without making the JAX objects)."""
        source = self._source
        return source.function_name if isinstance(source, ArtifactRecord) else source.fun_name

    in_tree = _JaxField[jax.tree_util.PyTreeDef]("The pytree of ``(args, kwargs)`` the function was exported for.")
    in_avals = _JaxField[tuple[ShapedArray, ...]]("The flat input abstract values.")
    out_tree = _JaxField[jax.tree_util.PyTreeDef]("The pytree of the results.")
    out_avals = _JaxField[tuple[ShapedArray, ...]]("The flat output abstract values.")
    in_shardings = _JaxField[tuple[Any, ...]]("One sharding per flat input (None: unspecified).")
    out_shardings = _JaxField[tuple[Any, ...]]("One sharding per flat output (None: unspecified).")
    ordered_effects = _JaxField[tuple[Any, ...]]("The effects that ``main`` threads a token for, in order.")
    unordered_effects = _JaxField[tuple[Any, ...]]("The other effects of the module.")
    nr_devices = _JaxField[int]("The number of devices the module was lowered for.")
    platforms = _JaxField[tuple[str, ...]]("The platforms it was lowered for (``\"cpu\"``, ``\"cuda\"``...).")
    disabled_safety_checks = _JaxField[tuple[DisabledSafetyCheck, ...]]("The checks disabled at export.")
    mlir_module_serialized = _JaxField[bytes]("The StableHLO portable artifact.")
    calling_convention_version = _JaxField[int]("The version of ``main``'s calling convention.")
    module_kept_var_idx = _JaxField[tuple[int, ...]]("The sorted indices of the flat inputs that ``main`` takes.")
    uses_global_constants = _JaxField[bool](
        "Whether ``main`` needs shape refinement (symbolic dimensions, a platform index).")
    lowering_platforms = _JaxField[tuple[str, ...]]("The 2023 name of :attr:`platforms`.", "platforms")
    mlir_module_serialization_version = _JaxField[int](
        "The 2023 name of :attr:`calling_convention_version`.", "calling_convention_version")
    serialization_version = mlir_module_serialization_version
    uses_shape_polymorphism = _JaxField[bool](
        "The 2023 name of :attr:`uses_global_constants`.", "uses_global_constants")

    def mlir_module(self) -> str:
        """The module as StableHLO text."""
        return module_text(self.mlir_module_serialized)

    @functools.cached_property
    def in_shardings_hlo(self) -> tuple[Any, ...]:
        """The flat input shardings as XLA's ``HloSharding``s, None where unspecified.

        As ``jax.export.Exported.in_shardings_hlo`` holds them for a
        deserialized artifact (an export that ``jax.export`` made in the
        process leaves them all None). They name neither the mesh nor its
        devices: to place arguments, use :meth:`in_shardings_jax`.
        """
        return tuple(hlo_sharding(s, a.ndim) for s, a in zip(self.in_shardings, self.in_avals))

    @functools.cached_property
    def out_shardings_hlo(self) -> tuple[Any, ...]:
        """The flat output shardings as XLA's ``HloSharding``s (see :attr:`in_shardings_hlo`)."""
        return tuple(hlo_sharding(s, a.ndim) for s, a in zip(self.out_shardings, self.out_avals))

    def in_shardings_jax(self, mesh: Mesh | AbstractMesh | None = None) -> tuple[Any, ...]:
        """The recorded input shardings over ``mesh``, for ``jax.device_put`` or ``jax.jit``.

        Without ``mesh``, the recorded ones over their abstract mesh (as JAX 0.12's).

        Raises:
            MeshMismatchError: ``mesh``'s axes differ from the exported mesh's.
        """
        return placement.for_mesh(self.in_shardings, mesh)

    def out_shardings_jax(self, mesh: Mesh | AbstractMesh) -> tuple[Any, ...]:
        """The recorded output shardings over ``mesh`` (see :meth:`in_shardings_jax`)."""
        return placement.for_mesh(self.out_shardings, mesh)

    def __str__(self) -> str:
        return f"Exported(fun_name={self.fun_name}, ...)"

    def __repr__(self) -> str:
        ins = ", ".join(str(a.str_short()) for a in self.in_avals)
        outs = ", ".join(str(a.str_short()) for a in self.out_avals)
        return (f"Exported(fun_name={self.fun_name!r}, ({ins}) -> ({outs}), "
                f"platforms={self.platforms}, nr_devices={self.nr_devices})")

def call_exported(exported: Exported) -> Callable[..., Any]:
    """The 2023 spelling of ``exported.call``: returns the calling function."""
    if not isinstance(exported, Exported):
        raise TypeError(f"call_exported expects a jaxport.Exported, got {type(exported).__name__}")
    return exported.call


def exported_of(record: ArtifactRecord, registry: PytreeSerializationRegistry | None = None,
                *, vjp_of_arity: int | None = None) -> Exported:
    """The :class:`Exported` of ``record`` with its JAX objects made now, as deserialization makes them.

    Raises:
        ArtifactError: this process cannot call the record (see
            :func:`~jaxport.adapters.jax.exported.jax_objects.jax_objects_of`).
    """
    exported = Exported(record, _registry=registry, _vjp_of_arity=vjp_of_arity)
    _ = exported._jax
    return exported
