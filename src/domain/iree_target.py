"""What IREE compiled a directory for, and whether this machine runs it.

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

from collections.abc import Mapping
from dataclasses import dataclass

from .runtime_errors import TargetMismatchError

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
