"""What a module may contain to be exported: the policy over the IR port.

The adapter walks the module once and reports only the operations that the
policy cares about, as :class:`OpSite` values; the decisions are made here.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from .custom_calls import ALLOW_ALL, HOST_CALLBACK_TARGETS, allowed_targets
from jaxport.domain.errors import DisallowedCustomCallError, HostCallbackError
from jaxport.domain.jax_docs import DocPages
from .safety import DisabledSafetyCheck


class OpKind(enum.Enum):
    """The operations the export policy looks at."""

    CUSTOM_CALL = "stablehlo.custom_call"


@dataclass(frozen=True, slots=True)
class OpSite:
    """One operation of a module, as the policy sees it.

    Attributes:
        kind: what the operation is.
        target: the custom-call target, for custom calls.
        describe: builds the operation's text and location for error messages;
            called only for operations that are reported.
    """

    kind: OpKind
    target: str | None = None
    describe: Callable[[], str] = lambda: "<operation>"


@dataclass(frozen=True, slots=True)
class ModulePolicy:
    """Which custom calls an export accepts.

    Sharding annotations are all accepted, as ``jax.export`` accepts them:
    also non-replicated ones inside a function jitted without in or out
    shardings (the call then runs on as many devices as the module names).

    Attributes:
        allowed_custom_calls: targets that may appear.
    """

    allowed_custom_calls: frozenset[str]

    @staticmethod
    def for_export(disabled: Sequence[DisabledSafetyCheck]) -> ModulePolicy:
        """The policy for an export with these disabled checks."""
        extra = (c.target for c in disabled if c.target is not None)
        return ModulePolicy(allowed_targets(extra))

    def allows(self, target: str) -> bool:
        """Whether a custom call to ``target`` may be exported."""
        return ALLOW_ALL in self.allowed_custom_calls or target in self.allowed_custom_calls

    def check(self, fun_name: str, sites: Iterable[OpSite], docs: DocPages) -> None:
        """Checks every reported operation of the module of ``fun_name`` (a refusal cites ``docs``).

        Raises:
            HostCallbackError: the module calls back into Python.
            DisallowedCustomCallError: it calls targets that are not allowed;
                every offending operation is listed with its location.
        """
        disallowed: list[str] = []
        for site in sites:
            if site.kind is OpKind.CUSTOM_CALL and site.target is not None:
                if site.target in HOST_CALLBACK_TARGETS:
                    raise HostCallbackError(fun_name)
                if not self.allows(site.target):
                    disallowed.append(site.describe())
        if disallowed:
            raise DisallowedCustomCallError(disallowed, docs)
