"""The verifying child of a converted directory: opens its model files and calls every variant once.

Run as ``python -m jaxport.application.conversion.verify_child AS_BYTES CPU_SECONDS``
by :mod:`.verify_directory`, an isolated child (:mod:`jaxport.adapters.isolated`:
``RLIMIT_AS``, ``RLIMIT_CPU``, no core dumps; JSON lines), with one request
(``{"path": ..., "options": {...}}``). It loads the directory with
the target's runtime (:func:`~.api.load_converted`, ``verify=False``: the
files' digests are checked again) and calls each variant of each function:
on the directory's golden examples that reach it, compared with the outputs
recorded at conversion (:mod:`.golden`), else once on zeros of its smallest inputs
(:mod:`jaxport.domain.converted.smallest_inputs`: the dimension variables
the variant leaves free at the smallest values the constraints allow), made
in the dtypes of its signature, through the runtime's own function objects,
as the caller's process will call it. A variant for which no inputs exist
(no values satisfy the constraints, a dtype the target cannot hold) is a
reason of the verdict that names its file, never skipped. It imports the
target's runtime, never JAX nor jaxlib.

It answers in JSON lines (the runtimes' own prints go to its standard
error): ``{"file": name}`` before each step
(so that the parent names the file when the child dies there), then
``{"ok": bool, "reasons": [...]}``, or ``{"caller": "UsageError", "message": ...}``
when the runtime refused the caller's options, which the parent raises as such.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from jaxport.adapters.array_compare import shape_of, zeros
from jaxport.adapters.isolated.child import Request, serve
from jaxport.domain.calls.front import leaf_paths
from jaxport.domain.converted.manifest import Variant
from jaxport.domain.converted.smallest_inputs import examined_variants, smallest_inputs
from jaxport.domain.errors import ArtifactCallError, JaxportError
from jaxport.domain.targets.plan import TargetPlan

if TYPE_CHECKING:
    from jaxport.application.conversion.model import ConvertedCall

#: The longest reason sent (a runtime's message may be long).
MAX_REASON_CHARS = 2000
#: How many of a variant's smallest inputs are called on zeros before the runtime's refusal of their
#: values is the verdict's reason.
CALL_TRIES = 4


def _reason(file: str, what: str, exc: BaseException) -> str:
    words = " ".join(f"{type(exc).__name__}: {exc}".split())
    return f"{file}: {what}: {words}"[:MAX_REASON_CHARS]


def _check(path: str, options: dict[str, Any], request: Request) -> list[str]:
    from jaxport.domain.errors import UsageError
    from jaxport.application.conversion.api import load_model, open_directory
    from jaxport.application.conversion.verify_directory import WRONG_EXAMPLE
    from jaxport.domain.targets.registry import target

    directory = open_directory(path)
    manifest = directory.manifest
    entry = target(manifest.target)
    files = sorted({v.file for f in manifest.functions for v in f.variants})
    request.say({"file": ", ".join(files)})
    try:
        model = load_model(directory, verify=False, **options)
    except UsageError as exc:  # the caller's mistake, not the directory's
        request.say({"caller": type(exc).__name__, "message": str(exc)})
        raise _CallerError from None
    except Exception as exc:  # the runtime's refusal, typed or not: the verdict names it
        return [_reason(", ".join(files), "the runtime cannot open it", exc)]
    reasons: list[str] = []
    if manifest.examples:
        from jaxport.application.conversion.golden import examples_on

        request.say({"file": manifest.examples_file})
        try:
            report = examples_on(path, model)
        except Exception as exc:
            return [_reason(manifest.examples_file, "the golden examples cannot run", exc)]
        reasons += [f"{_files_of(manifest, c.function)}: {c.function!r} {WRONG_EXAMPLE} {c.example} of "
                    f"{manifest.examples_file} wrongly ({c.output}: "
                    f"{c.problem or f'largest error {c.max_abs_error:g}, tolerance {c.tolerance}'})"
                    for c in report.failures]
    examined = examined_variants(manifest.functions, manifest.examples)
    for function in manifest.functions:
        for variant in function.variants:
            if (function.name, variant.file) not in examined:
                request.say({"file": variant.file})
                reasons += _call_on_zeros(model[function.name], variant, entry.plan)
    return reasons


def _call_on_zeros(call: ConvertedCall, variant: Variant, plan: TargetPlan) -> list[str]:
    """Why calling ``variant`` of ``call`` on zeros of its smallest inputs failed (none: it answered).

    The variant is called as the caller's process would call it (the runtime
    opens its model and function objects at their first call), whatever
    variant the front would choose for these sizes. Where the runtime ran the
    model and refused the values (an ``ArtifactCallError``: a constraint only
    the module's shape assertions hold, say), the next smallest inputs are
    tried, :data:`CALL_TRIES` in all; any other failure is the reason at once.
    """
    function = call.function
    for path, aval in zip(leaf_paths(call.signature.in_tree), call.signature.in_avals):
        why = plan.dtypes.why_not(aval.dtype, plan.runtime)
        if why is not None:
            return [f"{variant.file}: {function.name!r} cannot be called: its input {path} is {why}"]
    try:
        calls = smallest_inputs(function, variant, CALL_TRIES)
    except JaxportError as exc:
        return [_reason(variant.file, f"{function.name!r} cannot be called", exc)]
    refused: list[str] = []
    for specs in calls:
        try:
            arrays = [zeros([int(d) for d in spec.shape], spec.dtype) for spec in specs]
            results = call.runtime.run(function.name, variant, arrays)
        except ArtifactCallError as exc:
            refused.append(_reason(variant.file, f"calling {function.name!r} on zeros of shapes "
                                                 f"{[s.shape for s in specs]} failed", exc))
            continue
        except Exception as exc:
            return [_reason(variant.file, f"calling {function.name!r} failed", exc)]
        wrong = _wrong_results(function.signature.out_avals, results)
        return [f"{variant.file}: {function.name!r} answers wrongly: {wrong}"] if wrong else []
    return refused[:1]


def _files_of(manifest: Any, function: str) -> str:
    return ", ".join(sorted({v.file for f in manifest.functions if f.name == function for v in f.variants}))


def _wrong_results(avals: Any, results: list[Any]) -> str:
    if len(results) != len(avals):
        return f"{len(results)} results, the signature has {len(avals)}"
    for i, (aval, result) in enumerate(zip(avals, results)):
        shape = shape_of(result)
        if len(shape) != len(aval.shape):
            return f"result {i} has rank {len(shape)}, the signature says {len(aval.shape)}"
        for got, want in zip(shape, aval.shape):
            if want.isdigit() and int(want) != got:
                return f"result {i} has shape {shape}, the signature says {tuple(aval.shape)}"
    return ""


class _CallerError(Exception):
    """The load was refused for the caller's options or this machine's install: said, no verdict."""


def main() -> int:
    """Serves the request (see the module's text)."""
    return serve(_handle, sys.argv)


def _handle(request: Request) -> None:
    request.limit()
    path = str(request.header["path"])
    try:
        reasons = _check(path, dict(request.header["options"]), request)
    except _CallerError:
        return
    except Exception as exc:
        reasons = [_reason(path, "the directory cannot be read", exc)]
    request.say({"ok": not reasons, "reasons": reasons})


if __name__ == "__main__":
    sys.exit(main())
