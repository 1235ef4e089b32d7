"""The IREE target: what it refuses, how it checks a host, and its options.

IREE compiles static shapes only (one variant per binding of the dimension
variables the user names), erases JAX's ``shape_assertion`` (the call front
checks every call), runs no other custom call, no ordered effects, no module
for several devices, and compiles a multi-platform artifact's CPU branch.
Its ``target_details`` are the :class:`IreeTarget` compiled for and the
compiler's version.

IREE's ``llvm-cpu`` backend compiles for a triple (``aarch64-linux-gnu``,
the host's by default) and a CPU (a name such as ``x86-64-v3`` or
``cortex-a72``, ``host`` for this machine's, ``generic`` for the baseline of
the architecture); it resolves them into a CPU name and a list of CPU
features (``+avx2,+fma,-avx512f,...``) that the compiled code may use. The
modules are ELF objects that IREE's own loader runs on any operating system
of that architecture, so a machine runs them when it has the architecture
and every feature they require.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from jaxport.domain.artifact.record import DType
from jaxport.domain.bundle.manifest import WEIGHTS_FILE
from jaxport.domain.errors import TargetMismatchError
from jaxport.domain.errors import ArtifactError, ConversionError
from .dtypes import BOOL_AND_INTEGERS, DIFFERENTIABLE
from .plan import BFloat16, DtypeTable, TargetPlan
from .unfolded import ELEMENTWISE_KERNELS, is_kernel


#: What the requests default to: this machine.
HOST = "host"

_ARCH_ALIASES = {"amd64": "x86_64", "x86-64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


def normalize_arch(name: str) -> str:
    """An architecture's name as triples spell it.

    >>> normalize_arch("AMD64"), normalize_arch("arm64"), normalize_arch("riscv64")
    ('x86_64', 'aarch64', 'riscv64')
    """
    lowered = name.lower()
    return _ARCH_ALIASES.get(lowered, lowered)


def requested_cpu(target_cpu: str, target_triple: str | None) -> str:
    """The CPU to ask the compiler for: ``host`` means the baseline of another machine's
    architecture when a triple is given (this machine's CPU means nothing there).

    >>> requested_cpu("host", None), requested_cpu("host", "aarch64-linux-gnu")
    ('host', 'generic')
    >>> requested_cpu("cortex-a72", "aarch64-linux-gnu")
    'cortex-a72'
    """
    return "generic" if target_triple is not None and target_cpu == HOST else target_cpu


@dataclass(frozen=True, slots=True)
class IreeTarget:
    """A compilation target of IREE's ``llvm-cpu`` backend, as requested and as resolved.

    Attributes:
        requested_cpu: the CPU asked for (``"host"``, ``"x86-64-v3"``).
        requested_triple: the triple asked for (``"host"`` for this machine's).
        cpu: the CPU that the compiler resolved the request to (``"znver4"``).
        cpu_features: the features enabled (``"+avx2"``) and disabled (``"-amx-tile"``).
        triple: the triple of the compiled code (``"x86_64-unknown-unknown-eabi-elf"``).
        executable_format: IREE's name of the compiled executables' format
            (``"embedded-elf-x86_64"``).
        backend: IREE's target backend.
    """

    requested_cpu: str
    requested_triple: str
    cpu: str
    cpu_features: tuple[str, ...]
    triple: str
    executable_format: str
    backend: str = "llvm-cpu"

    @property
    def arch(self) -> str:
        """The architecture, as triples spell it (``"x86_64"``, ``"aarch64"``)."""
        return normalize_arch(self.triple.split("-", 1)[0])

    @property
    def required_features(self) -> tuple[str, ...]:
        """The CPU features the compiled code may use, without their ``+`` (a feature listed
        twice is as its last mention says, as LLVM reads the list)."""
        enabled: dict[str, bool] = {}
        for feature in self.cpu_features:
            enabled.pop(feature[1:], None)
            enabled[feature[1:]] = feature.startswith("+")
        return tuple(name for name, on in enabled.items() if on)

    def __str__(self) -> str:
        return f"{self.arch} (CPU {self.cpu}, triple {self.triple})"


def check_runs_here(target: IreeTarget, path: str, host_arch: str,
                    host_features: Mapping[str, bool]) -> None:
    """Checks that this machine runs code compiled for ``target``.

    Args:
        target: what the directory at ``path`` was compiled for.
        path: the directory, for the message.
        host_arch: this machine's architecture (any spelling).
        host_features: the CPU features this machine reports, by name; a
            required feature that it does not report is not checked.

    Raises:
        TargetMismatchError: another architecture, or a required feature absent.

    >>> t = IreeTarget("generic", "aarch64-linux-gnu", "generic", ("+neon",),
    ...                "aarch64-unknown-unknown-eabi-elf", "embedded-elf-arm_64")
    >>> check_runs_here(t, "m", "x86_64", {})
    Traceback (most recent call last):
    ...
    jaxport.errors.TargetMismatchError: m was compiled for aarch64 (CPU generic, ...
    """
    host = normalize_arch(host_arch)
    if target.arch != host:
        raise TargetMismatchError(path, str(target), f"{host}")
    missing = [f for f in target.required_features if host_features.get(f) is False]
    if missing:
        raise TargetMismatchError(path, str(target), f"{host}", missing)


#: The target, as messages name it.
PLAN_NAME = "IREE"
#: The scope of the modules' parameters (``iree-run-module --parameters=model=params.safetensors``).
PARAMETER_SCOPE = "model"
#: The module files' suffix (their names: :func:`~jaxport.domain.converted.static_shapes.variant_file`).
SUFFIX = ".vmfb"


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


def check_parameter_names(names: Sequence[str], header: bytes) -> None:
    """Checks that IREE can find each weight, by its key path, in the weights file with ``header``.

    IREE 3.13 writes a parameter's key into its compiled form without escaping
    it, so a key with ``"`` or ``\\`` would not read back; and its
    safetensors reader takes the header's keys as they are written, so a key
    that the header spells with JSON escapes (``\\u00fc`` for ``ü``, as
    jaxport wrote them before it wrote UTF-8) is not found.

    Raises:
        ConversionError: naming the first such weight.
    """
    for name in names:
        if '"' in name or "\\" in name:
            raise ConversionError(PLAN_NAME, None, f"the weight {name!r} has a key with a quote or a backslash, "
                                                      "which IREE cannot name as a parameter; rename that key")
        if not name.isascii() and f'"{name}"'.encode("utf-8") not in header:
            raise ConversionError(PLAN_NAME, None, f"the weights file spells the key {name!r} with JSON escapes, "
                                                      "which IREE's reader does not decode; save the bundle again")


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
    found: dict[str, Any] = {f.name: details.get(f.name) for f in fields(IreeTarget)}
    if not all(isinstance(value, str) for value in found.values()):
        raise ArtifactError(f"manifest.json: target_details lacks one of {list(found)}")
    features = found.pop("cpu_features")
    return IreeTarget(**found, cpu_features=tuple(features.split(",")) if features else ())


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
            f"the weights as --parameters={PARAMETER_SCOPE}={WEIGHTS_FILE}")


#: The dtypes that IREE 3.13 (``llvm-cpu``) holds, measured. Left out: ``int4``/``uint4`` (its
#: runtime maps no NumPy dtype to them), ``float8_e4m3b11fnuz``, ``float8_e4m3``,
#: ``float8_e3m4``, ``float4_e2m1fn`` (its HAL has no element type for them),
#: ``float8_e8m0fnu`` (it compiles, and computes wrong values), ``float0`` and the PRNG key
#: types (:mod:`jaxport.domain.targets.dtypes`).
IREE_DTYPES = (BOOL_AND_INTEGERS | DIFFERENTIABLE) - {DType.FLOAT8_E4M3B11FNUZ}


def unfolded_reason(operation: str, dtype: str) -> str | None:
    """Why IREE has no ``dtype`` form of the unfolded ``operation``, else None: its CPU backend links
    no float64 sine (iree-compile 3.13: ``undefined symbol: sin``), which the reflection formula of the
    lgamma and digamma decomposition needs.

    >>> unfolded_reason("stablehlo.fma", "float64") is None
    True
    """
    if dtype == "float64" and is_kernel(operation):
        return "its CPU backend has no float64 sine, which the decomposition's reflection formula needs"
    return None


PLAN = TargetPlan(
    runtime=PLAN_NAME,
    dtypes=DtypeTable(IREE_DTYPES, bfloat16=BFloat16.NATIVE),
    platforms=frozenset({"cpu"}),
    custom_calls=frozenset({"shape_assertion"}) | frozenset(ELEMENTWISE_KERNELS),  # the kernels unfolded
    needs_bindings=True,
    check_host=check_host,
    describe=describe,
    unfolded_reason=unfolded_reason,
)
