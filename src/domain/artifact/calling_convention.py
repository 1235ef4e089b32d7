"""The calling convention of an exported module's ``main`` function.

Version history (the versions JAX 0.10.2 reads and writes):

* 9 (2023-12): ordered effects are passed as tokens in ``main``, which takes
  ``(platform_index?, tokens..., arrays...)`` and returns ``(tokens..., results...)``.
* 10 (2024-05): platform index and dimension variables are passed to inner
  functions of the module as well; the default since jax 0.4.31.

Versions older than 9 are not produced, and deserialization refuses them
(:func:`check_version`); a raw module given with its signature keeps the
version it was recorded with, so that JAX's back-compatibility modules of
versions 6 and 7 still run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jaxport.domain.errors import CallingConventionError

MINIMUM_VERSION = 9
MAXIMUM_VERSION = 10
#: The argument attribute of ``main`` that marks a dimension argument; its value names the variable.
GLOBAL_CONSTANT_ATTR = "jax.global_constant"
#: The name that attribute gives the platform-index argument.
PLATFORM_INDEX = "_platform_index"
#: The argument attributes of ``main`` that mark an argument whose buffer the module donates, as
#: ``jax.jit(..., donate_argnums=...)`` lowers it: the result it is written into, or (where the
#: lowering left the choice of the result to XLA) donated alone.
DONATION_ATTRS = ("tf.aliasing_output", "jax.buffer_donor")


def check_version(version: int, *, when: str) -> int:
    """Returns ``version`` if it is in the supported window.

    Raises:
        CallingConventionError: it is not; the message names the window.
    """
    if not MINIMUM_VERSION <= version <= MAXIMUM_VERSION:
        raise CallingConventionError(version, MINIMUM_VERSION, MAXIMUM_VERSION, when=when)
    return version


@dataclass(frozen=True, slots=True)
class MainArguments:
    """The argument layout of an exported module's ``main``.

    ``main`` takes, in order: the platform index (an ``i32`` scalar, only when
    the module was lowered for more than one platform), one token per ordered
    effect, then the kept array arguments (``module_kept_var_idx``).
    """

    has_platform_index: bool
    nr_tokens: int
    kept_var_idx: tuple[int, ...]

    @staticmethod
    def for_export(nr_platforms: int, nr_ordered_effects: int,
                   kept_var_idx: tuple[int, ...]) -> MainArguments:
        """The layout an export with these properties gets."""
        return MainArguments(nr_platforms > 1, nr_ordered_effects, kept_var_idx)

    @property
    def first_array(self) -> int:
        """The position of the first array argument of ``main``."""
        return int(self.has_platform_index) + self.nr_tokens

    def __len__(self) -> int:
        return self.first_array + len(self.kept_var_idx)


def donated_inputs(donated_arguments: Sequence[bool], kept_var_idx: Sequence[int]) -> tuple[int, ...]:
    """The flat inputs whose buffers the module donates, from which arguments of ``main`` it donates.

    The array arguments are ``main``'s last ones, one per kept input; what
    comes before them (the platform index, dimension arguments, tokens) is
    never donated.

    >>> donated_inputs([False, False, True, True], kept_var_idx=(0, 2, 3))
    (2, 3)
    """
    arrays = donated_arguments[len(donated_arguments) - len(kept_var_idx):]
    return tuple(index for index, donated in zip(kept_var_idx, arrays) if donated)
