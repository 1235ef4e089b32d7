"""The verifying child of a converted directory: opens its model files and calls every variant once.

Run as ``python -m jaxport.application.conversion.verify_child`` by
:mod:`.verification`, with a JSON request on stdin (``{"path": ..., "options":
{...}, "address_space": bytes, "cpu_seconds": s}``). It first limits itself
(``RLIMIT_AS``, ``RLIMIT_CPU``, no core dumps), then loads the directory with
the target's runtime (:func:`~.model.load_converted`, ``verify=False``: the
files' digests are checked again) and calls each variant of each function:
on the directory's golden examples, compared with the outputs recorded at
conversion (:mod:`.numerics`), and once on zeros of the variant's signature
(dimension variables the variant leaves free: 1). It imports the target's
runtime, never JAX nor jaxlib.

It answers on its standard output, one JSON object a line (the runtimes'
own prints go to its standard error): ``{"file": name}`` before each step
(so that the parent names the file when the child dies there), then
``{"ok": bool, "reasons": [...]}``, or ``{"caller": "UsageError", "message": ...}``
when the runtime refused the caller's options, which the parent raises as such.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import IO, Any

#: The longest reason sent (a runtime's message may be long).
MAX_REASON_CHARS = 2000


def _limit_self(address_space: int, cpu_seconds: int) -> None:
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if address_space > 0:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
        if cpu_seconds > 0:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
    except (ValueError, OSError):  # a platform without these limits: the parent's timeout remains
        pass


def _say(out: IO[str], **value: Any) -> None:
    out.write(json.dumps(value) + "\n")
    out.flush()


def _reason(file: str, what: str, exc: BaseException) -> str:
    words = " ".join(f"{type(exc).__name__}: {exc}".split())
    return f"{file}: {what}: {words}"[:MAX_REASON_CHARS]


def _zeros(model: Any, name: str, binding: dict[str, int]) -> list[Any] | None:
    """Zeros of the shapes that ``binding`` (free variables: 1) gives ``name``'s inputs; None: none fit."""
    import numpy as np

    from jaxport.domain.calls.front import record_shapes
    from jaxport.domain.errors import JaxportError

    call = model[name]
    avals = call.record.in_avals
    try:
        shapes = record_shapes(avals, call.record.constraints)
        env = {v: 1 for shape in shapes for d in shape if not isinstance(d, int) for v in d._get_vars()}
        env.update(binding)
        arrays = [np.zeros(tuple(d if isinstance(d, int) else int(d._evaluate(env)) for d in shape),
                           dtype=_dtype(a.dtype)) for shape, a in zip(shapes, avals)]
        call.variant_of(arrays)
    except (JaxportError, TypeError, ValueError, OverflowError):
        return None
    return arrays


def _dtype(name: str) -> Any:
    import numpy as np

    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))


def _check(path: str, options: dict[str, Any], out: IO[str]) -> list[str]:
    from jaxport.domain.errors import UsageError
    from .model import load_converted, read_converted
    from .verification import WRONG_EXAMPLE

    manifest, _ = read_converted(path)
    files = sorted({v.file for f in manifest.functions for v in f.variants})
    _say(out, file=", ".join(files))
    try:
        model = load_converted(path, verify=False, **options)
    except UsageError as exc:  # the caller's mistake, not the directory's
        _say(out, caller=type(exc).__name__, message=str(exc))
        raise _CallerError from None
    except Exception as exc:  # the runtime's refusal, typed or not: the verdict names it
        return [_reason(", ".join(files), "the runtime cannot open it", exc)]
    reasons: list[str] = []
    if manifest.examples:
        from .numerics import examples_on

        _say(out, file=manifest.examples_file)
        try:
            report = examples_on(path, model)
        except Exception as exc:
            return [_reason(manifest.examples_file, "the golden examples cannot run", exc)]
        reasons += [f"{_files_of(manifest, c.function)}: {c.function!r} {WRONG_EXAMPLE} {c.example} of "
                    f"{manifest.examples_file} wrongly ({c.output}: "
                    f"{c.problem or f'largest error {c.max_abs_error:g}, tolerance {c.tolerance}'})"
                    for c in report.failures]
    for function in manifest.functions:
        for variant in function.variants:
            _say(out, file=variant.file)
            arrays = _zeros(model, function.name, variant.binding)
            if arrays is None:
                continue
            try:
                results = model[function.name].run_flat(arrays)
            except Exception as exc:
                reasons.append(_reason(variant.file, f"calling {function.name!r} failed", exc))
                continue
            wrong = _wrong_results(function.signature.out_avals, results)
            if wrong:
                reasons.append(f"{variant.file}: {function.name!r} answers wrongly: {wrong}")
    return reasons


def _files_of(manifest: Any, function: str) -> str:
    return ", ".join(sorted({v.file for f in manifest.functions if f.name == function for v in f.variants}))


def _wrong_results(avals: Any, results: list[Any]) -> str:
    import numpy as np

    if len(results) != len(avals):
        return f"{len(results)} results, the signature has {len(avals)}"
    for i, (aval, result) in enumerate(zip(avals, results)):
        array = np.asarray(result)
        if array.ndim != len(aval.shape):
            return f"result {i} has rank {array.ndim}, the signature says {len(aval.shape)}"
        for got, want in zip(array.shape, aval.shape):
            if want.isdigit() and int(want) != got:
                return f"result {i} has shape {array.shape}, the signature says {tuple(aval.shape)}"
    return ""


class _CallerError(Exception):
    """The load was refused for the caller's options or this machine's install: said, no verdict."""


def main() -> int:
    """Serves one request (see the module's text)."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what the runtimes print does not mix with the answer
    request = json.loads(sys.stdin.read(1 << 20))
    _limit_self(int(request["address_space"]), int(request["cpu_seconds"]))
    try:
        reasons = _check(str(request["path"]), dict(request["options"]), out)
    except _CallerError:
        return 0
    except Exception as exc:
        reasons = [_reason(str(request["path"]), "the directory cannot be read", exc)]
    _say(out, ok=not reasons, reasons=reasons)
    return 0


if __name__ == "__main__":
    sys.exit(main())
