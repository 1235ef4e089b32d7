"""The IREE target: what it refuses, how it checks a host, and its options.

IREE compiles static shapes only (one variant per binding of the dimension
variables the user names), erases JAX's ``shape_assertion`` (the call front
checks every call), runs no other custom call, no ordered effects, no module
for several devices, and compiles a multi-platform artifact's CPU branch.
Its ``target_details`` are the :class:`~.iree_target.IreeTarget` compiled for
and the compiler's version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .errors import ArtifactError
from .iree_target import HOST, IreeTarget, check_runs_here
from .runtime_dtypes import IREE_DTYPES
from .target_plan import BFloat16, DtypeTable, TargetPlan

#: The scope of the modules' parameters (``iree-run-module --parameters=model=params.safetensors``).
PARAMETER_SCOPE = "model"


@dataclass(frozen=True, slots=True)
class IreeOptions:
    """How to compile for IREE.

    Attributes:
        target_cpu: ``"host"`` (this machine's), an LLVM CPU name
            (``"x86-64-v3"``, ``"cortex-a72"``), ``"generic"``.
        target_triple: the machine to compile for (``"aarch64-linux-gnu"``);
            None for this one. With a triple, ``"host"`` means ``"generic"``.
    """

    target: ClassVar[str] = "iree"
    target_cpu: str = HOST
    target_triple: str | None = None


def module_file(function: str, dims: Mapping[str, int]) -> str:
    """The file name of ``function``'s module for ``dims`` (function names hold no ``=``).

    >>> module_file("predict", {"t": 16, "b": 1}), module_file("f", {})
    ('predict.b=1,t=16.vmfb', 'f.vmfb')
    """
    if not dims:
        return f"{function}.vmfb"
    return f"{function}." + ",".join(f"{k}={v}" for k, v in sorted(dims.items())) + ".vmfb"


def details_of(target: IreeTarget, compiler: str) -> dict[str, Any]:
    """The ``target_details`` of a directory compiled for ``target`` by IREE ``compiler``."""
    return {"backend": target.backend, "requested_cpu": target.requested_cpu,
            "requested_triple": target.requested_triple, "cpu": target.cpu,
            "cpu_features": ",".join(target.cpu_features), "triple": target.triple,
            "executable_format": target.executable_format, "compiler": compiler,
            "parameter_scope": PARAMETER_SCOPE}


def target_of(details: Mapping[str, Any]) -> IreeTarget:
    """The :class:`IreeTarget` that :func:`details_of` recorded.

    Raises:
        ArtifactError: a field is missing or not text.
    """
    keys = ("requested_cpu", "requested_triple", "cpu", "cpu_features", "triple", "executable_format", "backend")
    if not all(isinstance(details.get(k), str) for k in keys):
        raise ArtifactError(f"manifest.json: target_details lacks one of {list(keys)}")
    features = details["cpu_features"]
    return IreeTarget(details["requested_cpu"], details["requested_triple"], details["cpu"],
                      tuple(features.split(",")) if features else (), details["triple"],
                      details["executable_format"], details["backend"])


def check_host(details: Mapping[str, Any], host: Mapping[str, Any], path: str) -> None:
    """Checks that this host (``{"arch": ..., "cpu_features": {name: bool}}``) runs the directory's code.

    Raises:
        TargetMismatchError: another architecture, or a required CPU feature absent.
    """
    check_runs_here(target_of(details), path, str(host.get("arch", "")), dict(host.get("cpu_features", {})))


def describe(details: Mapping[str, Any]) -> str:
    """What ``jaxport inspect`` says of the target (``iree-run-module`` takes the weights as
    ``--parameters=model=params.safetensors``)."""
    t = target_of(details)
    n = len(t.required_features)
    return (f"compiled for {t} by IREE {details.get('compiler', '?')}, {n} CPU feature{'' if n == 1 else 's'} "
            f"required; asked for CPU {t.requested_cpu}, triple {t.requested_triple}; iree-run-module takes "
            f"the weights as --parameters={PARAMETER_SCOPE}=params.safetensors")


PLAN = TargetPlan(
    runtime="IREE",
    dtypes=DtypeTable(IREE_DTYPES, bfloat16=BFloat16.NATIVE),
    platforms=frozenset({"cpu"}),
    needs_bindings=True,
    check_host=check_host,
    describe=describe,
)
