"""Each target's adapters, as typed lazy factories beside the composition root.

The targets' registry (:mod:`jaxport.domain.targets.registry`) holds the
domain facts of each target; this table gives, by the same name, the
factories of its converter, its runtime and (for a plan with a host check)
its host facts. Each factory imports its adapter when called, so that
loading a converted directory imports only its own runtime (never jaxlib),
and mypy checks what each returns against its port.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from jaxport.domain.errors import MissingExtraError

if TYPE_CHECKING:
    from jaxport.domain.targets.ports import Converter, HostFacts, RuntimeLoader
    from jaxport.domain.targets.registry import TargetEntry

_P = TypeVar("_P")


@dataclass(frozen=True, slots=True)
class TargetAdapters:
    """The factories of one target's adapters (each imports its module when called)."""

    converter: Callable[[], Converter]
    runtime: Callable[[], RuntimeLoader]
    host_facts: Callable[[], HostFacts] | None = None


# Each adapter is imported when its target is used: another target's converter or runtime never loads
# (tests/e2e/test_converted_load_imports.py, test_conversion_imports.py).
def _savedmodel_converter() -> Converter:
    from jaxport.adapters.savedmodel.converter import convert
    return convert


def _savedmodel_runtime() -> RuntimeLoader:
    from jaxport.adapters.savedmodel.runtime import load
    return load


def _savedmodel_host() -> HostFacts:
    from jaxport.adapters.savedmodel.runtime import host_facts
    return host_facts


def _iree_converter() -> Converter:
    from jaxport.adapters.iree.converter import convert
    return convert


def _iree_runtime() -> RuntimeLoader:
    from jaxport.adapters.iree.runtime import load
    return load


def _iree_host() -> HostFacts:
    from jaxport.adapters.iree.runtime import host_facts
    return host_facts


def _onnx_converter() -> Converter:
    from jaxport.adapters.onnx.converter import convert
    return convert


def _onnx_runtime() -> RuntimeLoader:
    from jaxport.adapters.onnx.runtime import load
    return load


def _litert_converter() -> Converter:
    from jaxport.adapters.litert.converter import convert
    return convert


def _litert_runtime() -> RuntimeLoader:
    from jaxport.adapters.litert.runtime import load
    return load


#: Every target's adapters, by the registry's name (a test checks both tables name the same targets).
ADAPTERS: dict[str, TargetAdapters] = {
    "savedmodel": TargetAdapters(_savedmodel_converter, _savedmodel_runtime, _savedmodel_host),
    "iree": TargetAdapters(_iree_converter, _iree_runtime, _iree_host),
    "onnx": TargetAdapters(_onnx_converter, _onnx_runtime),
    "litert": TargetAdapters(_litert_converter, _litert_runtime),
}


def _built(entry: TargetEntry, factory: Callable[[], _P], what: str) -> _P:
    try:
        return factory()
    except MissingExtraError:
        raise
    except ImportError as exc:
        raise MissingExtraError(f"{what} {entry.plan.runtime}", entry.extra, exc) from exc


def converter(entry: TargetEntry) -> Converter:
    """The converter of ``entry``'s target, its module imported now.

    Raises:
        MissingExtraError: the target's extra is not installed (the message names it).
    """
    return _built(entry, ADAPTERS[entry.name].converter, "The converter for")


def runtime(entry: TargetEntry) -> RuntimeLoader:
    """The runtime loader of ``entry``'s target, its module imported now (raises as :func:`converter`)."""
    return _built(entry, ADAPTERS[entry.name].runtime, "The runtime of")


def host_facts(entry: TargetEntry) -> HostFacts | None:
    """What ``entry``'s runtime says of this machine, or None without a host check (raises as :func:`converter`)."""
    facts = ADAPTERS[entry.name].host_facts
    return None if facts is None else _built(entry, facts, "The runtime of")
