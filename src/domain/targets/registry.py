"""The registry of runtime targets: one entry per target, its domain facts.

A target is a converter adapter, a runtime adapter, a domain plan of what it
refuses (:class:`~.plan.TargetPlan`, with its options class, in the target's
domain module) and one entry here. The public API (``jaxport.convert``, ``jaxport.load_converted``),
the CLI (``convert``, ``run``, ``inspect``, ``check --numerics``) and the
numerics check dispatch through this table; each target's adapters are typed
lazy factories in :mod:`jaxport.application.target_adapters`, under the same
name, so that loading a converted directory imports only its runtime (never
jaxlib) and the domain names no adapter.

Each entry names:

* ``domain``: the target's domain module, which holds its ``PLAN`` and its
  options class (named by ``options_class``); both are imported on first use
  (``entry.plan``, ``entry.options``), so that loading a directory imports
  no other target's module;
* ``manifest_dir``: where the manifest goes in the directory (``""``: its root);
* ``extra``: the pip extra that installs the target (``jaxport[iree]``);
* ``loads``: the top-level modules that loading may import besides the
  standard library, NumPy and jaxport (``("tensorflow",)`` for a SavedModel).

What this table cannot hold, each target's ``jaxport.to_NAME`` and its part of ``jaxport convert``'s
help and flags, is listed beside it, once, in
:mod:`jaxport.application.conversion.targets`. ``TARGETS`` is public as
``jaxport.TARGETS``. docs/developers/adding-a-target.md lists every file a
new target adds or edits.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import cast
from jaxport.domain.converted.manifest import MANIFEST_FILE
from jaxport.domain.errors import UsageError
from .plan import TargetPlan


@dataclass(frozen=True, slots=True)
class TargetEntry:
    """One runtime target (see the module's docstring).

    ``plan`` and ``options`` are read from the target's domain module
    (``domain``: its ``PLAN`` and the class named ``options_class``) when first
    asked for, so that loading a directory imports its own target's module only
    (each module's records are dataclasses: creating them costs a fresh process).
    """

    name: str
    domain: str
    options_class: str
    extra: str
    manifest_dir: str = ""
    loads: tuple[str, ...] = ()

    @property
    def plan(self) -> TargetPlan:
        """What the target refuses and checks (:class:`~.plan.TargetPlan`), from its domain module."""
        return cast(TargetPlan, importlib.import_module(self.domain).PLAN)

    @property
    def options(self) -> type:
        """The target's options class (``OnnxOptions``), from its domain module."""
        return cast(type, getattr(importlib.import_module(self.domain), self.options_class))

    @property
    def manifest_path(self) -> str:
        """The manifest's path relative to the directory's root."""
        return f"{self.manifest_dir}/{MANIFEST_FILE}" if self.manifest_dir else MANIFEST_FILE


#: Every target, by name (the ``to=`` of ``jaxport.convert``, the manifest's ``target``).
TARGETS: Mapping[str, TargetEntry] = MappingProxyType({e.name: e for e in (
    TargetEntry("savedmodel", "jaxport.domain.targets.savedmodel", "SavedModelOptions", extra="tf",
                manifest_dir="assets.extra/jaxport",  # savedmodel.JAXPORT_DIR
                loads=("tensorflow",)),
    TargetEntry("iree", "jaxport.domain.targets.iree", "IreeOptions", extra="iree", loads=("iree",)),
    TargetEntry("onnx", "jaxport.domain.targets.onnx", "OnnxOptions", extra="onnx", loads=("onnx", "onnxruntime")),
    TargetEntry("litert", "jaxport.domain.targets.litert", "LiteRtOptions", extra="litert",
                loads=("ai_edge_litert",)),
)})


def target(name: str) -> TargetEntry:
    """The entry of target ``name``.

    Raises:
        UsageError: there is none (the message lists the targets).
    """
    try:
        return TARGETS[name]
    except KeyError:
        raise UsageError(f"Unknown target {name!r}: the targets are {sorted(TARGETS)}") from None
