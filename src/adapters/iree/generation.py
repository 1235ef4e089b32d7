"""A converted generative model's steps on IREE, the cache kept as IREE's device arrays between steps.

:func:`device_calls` makes the flat calls that
:class:`~jaxport.adapters.numpy.steps.HostStepRunner` runs the steps with:
each step's results stay IREE's ``DeviceArray``\\ s (HAL buffer views), and the
runner hands the cache's back to the next step as they are, so IREE reads the
buffers it wrote; only the logits are read on the host (mapped, on the CPU).
The cache goes from the host to IREE once, at the prefill (its zeros).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jaxport.adapters.iree.runtime import IreeRuntime
from jaxport.domain.converted.manifest import Variant

#: A flat call: the caller's flat arrays (host or IREE's) in, the flat results (IREE's) out.
FlatCall = Callable[[list[Any]], list[Any]]


def device_calls(runtime: IreeRuntime, variants: Mapping[str, Callable[[list[Any]], Variant]]) -> dict[str, FlatCall]:
    """Per function name, its flat call on ``runtime`` whose results stay on IREE's device.

    Args:
        runtime: the directory's IREE runtime.
        variants: per function name, what picks the variant of a call's flat arrays (and checks them).
    """
    def call(name: str, variant_of: Callable[[list[Any]], Variant]) -> FlatCall:
        return lambda leaves: runtime.run_on_device(name, variant_of(leaves), leaves)

    return {name: call(name, variant_of) for name, variant_of in variants.items()}
