"""The export service: trace, lower, check and serialize a JAX function, on the ports it is given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax

from jaxport.adapters.jax import internals as jax_internals
from jaxport.adapters.jax.lowering.foreign_dims import translate_specs
from jaxport.adapters.jax.lowering.avals import args_kwargs_path, leaf_paths
from jaxport.adapters.jax.lowering.dims import JaxDim
from jaxport.adapters.jax.lowering.lower import JaxLowering
from jaxport.adapters.jax.records import named_shardings_with_abstract_mesh
from jaxport.domain.artifact import calling_convention
from jaxport.domain.artifact.module_policy import ModulePolicy
from jaxport.domain.artifact.platforms import normalize_platforms
from jaxport.domain.ports import Lowerer, StableHlo
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.domain.symbolic import ArgDim, DimExpr, ScopeMixingError, build_plan
from jaxport.domain.symbolic.clipping import clipping_note
from jaxport.adapters.jax.exported.derived import batched_exporter, vjp_exporter
from jaxport.adapters.jax.exported.exported import Exported
from jaxport.adapters.jax.exported.jax_objects import JaxObjects


@dataclass(frozen=True, slots=True)
class ExportService:
    """Exports functions through a lowerer and the StableHLO port (the policy's walk, the wrapper,
    the serializer and the version it writes for)."""

    lowerer: Lowerer[JaxLowering]
    stablehlo: StableHlo

    def export(self, fun: Callable[..., Any], *, platforms: Sequence[str] | None,
               disabled_checks: Sequence[DisabledSafetyCheck],
               args_specs: Sequence[Any], kwargs_specs: dict[str, Any],
               override_lowering_rules: Sequence[tuple[Any, Any]] | None = None) -> Exported:
        """Exports ``fun`` for the given argument specs.

        The calling-convention version recorded is JAX's configured
        ``jax_export_calling_convention_version`` (versions 9 and 10 lower alike).

        Raises:
            CallingConventionError: the configured version is outside the supported window.
            ExportError: the module violates the export policy.
            HostCallbackError: the function uses host callbacks.
        """
        checks = tuple(disabled_checks)
        for check in checks:
            if not isinstance(check, DisabledSafetyCheck):
                raise TypeError(f"disabled_checks must hold DisabledSafetyCheck values, got {check!r}")
        plats = normalize_platforms(platforms) if platforms is not None else (jax_internals.default_export_platform(),)
        version = calling_convention.check_version(
            int(getattr(jax.config, "jax_export_calling_convention_version")), when="requested export")
        args_specs, kwargs_specs = translate_specs((tuple(args_specs), kwargs_specs), JaxDim)
        _check_one_scope(getattr(fun, "__name__", repr(fun)), args_specs, kwargs_specs)
        rules = tuple(override_lowering_rules) if override_lowering_rules is not None else None
        try:
            lowering = self.lowerer.lower(fun, plats, args_specs, kwargs_specs, rules)
        except Exception as exc:
            _note_clipped_dimensions(exc)
            raise
        return self._finish(lowering, checks, version)

    def exporter(self, fun: Callable[..., Any], *, platforms: Sequence[str] | None = None,
                 disabled_checks: Sequence[DisabledSafetyCheck] = (),
                 override_lowering_rules: Sequence[tuple[Any, Any]] | None = None) -> Callable[..., Exported]:
        """``jaxport.export(fun, ...)`` on this service: a function of the argument specs."""

        def do_export(*args_specs: Any, **kwargs_specs: Any) -> Exported:
            return self.export(fun, platforms=platforms, disabled_checks=disabled_checks,
                               args_specs=args_specs, kwargs_specs=kwargs_specs,
                               override_lowering_rules=override_lowering_rules)

        return do_export

    def _finish(self, lowering: JaxLowering, checks: tuple[DisabledSafetyCheck, ...],
                version: int) -> Exported:
        policy = ModulePolicy.for_export(checks)
        policy.check(lowering.fun_name, self.stablehlo.sites(lowering.module), JaxDim.docs)
        module = lowering.module
        symbolic = any(isinstance(d, DimExpr) for a in lowering.in_avals for d in a.shape)
        if symbolic or lowering.ordered_effects:
            plan = build_plan(tuple(tuple(a.shape) for a in lowering.in_avals), leaf_paths(lowering.in_tree, lowering.in_avals))
            module = self.stablehlo.wrap_main(
                module, plan=plan, dim_vars=lowering.dim_vars,
                has_platform_index=lowering.has_platform_index,
                nr_tokens=len(lowering.ordered_effects), kept_var_idx=lowering.kept_var_idx,
                shape_assertions=DisabledSafetyCheck.shape_assertions() not in checks,
                symbolic_dims=tuple(ArgDim(i, j) for i, a in enumerate(lowering.in_avals)
                                    for j, d in enumerate(a.shape) if isinstance(d, DimExpr)))
        all_shardings = (*lowering.in_shardings, *lowering.out_shardings)
        objects = JaxObjects(
            fun_name=lowering.fun_name,
            in_tree=lowering.in_tree,
            in_avals=lowering.in_avals,
            out_tree=lowering.out_tree,
            out_avals=lowering.out_avals,
            in_shardings=named_shardings_with_abstract_mesh(
                lowering.in_shardings, [a.ndim for a in lowering.in_avals], all_shardings),
            out_shardings=named_shardings_with_abstract_mesh(
                lowering.out_shardings, [a.ndim for a in lowering.out_avals], all_shardings),
            nr_devices=lowering.nr_devices,
            platforms=lowering.platforms,
            ordered_effects=lowering.ordered_effects,
            unordered_effects=lowering.unordered_effects,
            disabled_safety_checks=checks,
            mlir_module_serialized=self.stablehlo.serialize(
                module, target_version=self.stablehlo.export_target_version(),
                uses_global_constants=lowering.uses_dim_vars),
            calling_convention_version=version,
            module_kept_var_idx=lowering.kept_var_idx,
            uses_global_constants=lowering.uses_dim_vars,
        )
        return Exported(
            objects,
            _export_vjp=vjp_exporter(lowering.jaxpr, lowering.platforms, checks, export=self.exporter),
            _export_batched=batched_exporter(lowering.fun_name, lowering.jaxpr, lowering.platforms,
                                            checks, lowering.in_avals, export=self.exporter))


def _note_clipped_dimensions(exc: Exception) -> None:
    """Adds to a tracing failure the constraints that decide the ``min``/``max`` of a dimension
    and a constant it shows (``min(1024, t)`` against ``t``); its type stays what JAX raised."""
    note = clipping_note(str(exc))
    if note is not None and note not in getattr(exc, "__notes__", ()):
        exc.add_note(note)


def _check_one_scope(fun_name: str, args_specs: Sequence[Any], kwargs_specs: dict[str, Any]) -> None:
    """All symbolic dimensions of one export must come from one scope."""
    first: tuple[DimExpr, str] | None = None
    leaves = jax.tree_util.tree_flatten_with_path((tuple(args_specs), kwargs_specs))[0]
    for path, spec in leaves:
        for d in getattr(spec, "shape", ()):
            if not isinstance(d, DimExpr):
                continue
            where = args_kwargs_path(path)
            if first is None:
                first = (d, where)
            elif d.scope is not first[0].scope:
                raise ScopeMixingError(f"when exporting {fun_name}", str(first[0].scope), str(d),
                                       str(d.scope), docs=JaxDim.docs, expected_from=f"current (from {first[1]}) ",
                                       culprit_from=where)
