"""``jaxport check PATH...``: verify artifacts you did not write; exit 0 only when all pass.

``--consumer`` asks instead whether a JAX or TensorFlow release reads them;
``--numerics`` runs a directory's golden examples again and compares.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from jaxport.domain.errors import ArtifactError, JaxportError
from jaxport.application.cli.common import UsageError, each_path

# What a check runs on is imported where it runs: `jaxport --help` loads none of it
# (tests/unit/test_purity.py; figures: cli/main.py).


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``check`` to ``commands``."""
    cmd = commands.add_parser(
        "check", parents=[common], help="verify artifacts and bundles (digest, modules, signature, custom calls)",
        description="Verify each artifact as jaxport.load does: the digest of jaxport-written "
                    "files and every field; each module parsed, verified and re-serialized in a "
                    "separate process under time and memory limits; main's signature against the "
                    "record; every custom call against JAX's stable targets plus "
                    "--allow-custom-call (the artifact's own disabled checks do not count). A "
                    "bundle directory is checked whole, as jaxport.load_bundle does, its golden "
                    "examples' file included. A directory that jaxport converted is checked as "
                    "jaxport.load_converted verifies it: its files against its manifest, then every model file "
                    "opened and every variant called in a separate process under limits. One line per "
                    "path. With --consumer, say instead whether that JAX or TensorFlow release "
                    "can read and run each artifact or bundle (calling convention, StableHLO "
                    "version, fields of the format), from jaxport's table of consumers; that "
                    "needs no JAX. With --numerics, run the golden examples that a bundle was saved "
                    "with on the runtime the directory is for (a bundle: JAX; a SavedModel jaxport "
                    "converted: TensorFlow; an IREE directory: IREE; both without JAX; a bundle on "
                    "another one with --runtime) and "
                    "print, per function and output, the largest absolute and relative errors against "
                    "JAX's outputs at save, the tolerance and the verdict. Exit status: 0 all pass, "
                    "1 some fail, 2 a path cannot be read.")
    cmd.add_argument("paths", nargs="+", metavar="PATH",
                     help="artifact files, bundle directories or directories that jaxport converted")
    cmd.add_argument("--allow-custom-call", action="append", default=[], metavar="TARGET",
                     help="accept this custom-call target too (repeat)")
    cmd.add_argument("--consumer", action="append", default=[], metavar="RUNTIME==VERSION",
                     help="check that this release reads and runs the paths: jax==0.9.2, tf==2.21 (repeat)")
    cmd.add_argument("--numerics", action="store_true",
                     help="run the golden examples of each directory and compare them with JAX's outputs")
    cmd.add_argument("--runtime", metavar="NAME", help="with --numerics: check a bundle on this runtime "
                     "(a target: savedmodel, iree), converting it into a temporary directory first")
    cmd.add_argument("--rtol", type=float, metavar="X", help="with --numerics: the relative tolerance of "
                     "floating outputs (default: by dtype, float32 1e-5)")
    cmd.add_argument("--atol", type=float, metavar="X", help="with --numerics: the absolute tolerance of "
                     "floating outputs (default: by dtype, float32 1e-6)")
    cmd.add_argument("--json", action="store_true", help="print one JSON object per path")
    cmd.set_defaults(handler=check_paths)


def check_paths(args: argparse.Namespace) -> int:
    """Verifies each path and prints its verdict."""
    numerics_only = [flag for flag, value in (("--runtime", args.runtime), ("--rtol", args.rtol),
                                              ("--atol", args.atol)) if value is not None]
    if numerics_only and not args.numerics:
        raise UsageError(f"{numerics_only[0]} goes with --numerics")
    if args.numerics and args.consumer:
        raise UsageError("--numerics and --consumer are separate checks: give one")
    if args.numerics:
        return check_numerics(args)
    if args.consumer:
        return check_consumers(args)

    def verify(path: str) -> bool:
        ok, reasons, detail = _check(path, args.allow_custom_call)
        if args.json:
            print(json.dumps({"path": path, "ok": ok, "reasons": list(reasons), **detail}))
        elif ok:
            print(f"{path}: ok ({_summary(detail)})")
        else:
            print(f"{path}: FAILED: {'; '.join(' '.join(r.split()) for r in reasons)}")
        return ok

    return each_path(args, args.paths, verify)


def check_consumers(args: argparse.Namespace) -> int:
    """Prints, per path and consumer, whether the consumer can read and run it."""
    from jaxport.domain.artifact.consumers import find_consumer
    from jaxport.application.verify_artifact import check_consumer

    for spec in args.consumer:
        find_consumer(spec)  # a consumer the table lacks is the user's mistake, before any file is read

    def consumers(path: str) -> bool:
        passed = True
        for spec in args.consumer:
            found = check_consumer(path, spec)
            if args.json:
                print(json.dumps({"path": path, "consumer": spec, "ok": found.ok,
                                  "reasons": list(found.reasons), "notes": list(found.notes),
                                  "source": found.consumer.source}))
            else:
                print(f"{path}: {found}")
            passed = passed and found.ok
        return passed

    return each_path(args, args.paths, consumers)


def check_numerics(args: argparse.Namespace) -> int:
    """Prints, per directory, the table of its golden examples run again."""
    from jaxport.domain.converted.numerics import tolerance_for
    from jaxport.application.conversion.numerics import check_numerics as run_examples

    try:
        tolerance_for("float32", args.rtol, args.atol)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc

    def numerics(path: str) -> bool:
        try:
            report = run_examples(path, runtime=args.runtime, rtol=args.rtol, atol=args.atol)
        except ArtifactError as exc:
            print(json.dumps({"path": path, "ok": False, "reasons": [str(exc)]}) if args.json
                  else f"{path}: FAILED: {' '.join(str(exc).split())}")
            return False
        print(json.dumps(report.to_json()) if args.json else report)
        return report.ok

    return each_path(args, args.paths, numerics)


def _summary(detail: dict[str, Any]) -> str:
    if "target" in detail:
        count = detail["functions"]
        return (f"converted for {detail['target']}, {count} function{'s' if count != 1 else ''}; every model "
                "file opened and every variant called in a separate process")
    if "functions" in detail:
        count = detail["functions"]
        return f"bundle of {count} function{'s' if count != 1 else ''}"
    sealed = "sealed" if detail["sealed"] else "no digest: not written by jaxport"
    return f"{sealed}; sha256 {detail['sha256'][:16]}"


def _check(path: str, allowed: list[str]) -> tuple[bool, tuple[str, ...], dict[str, Any]]:
    """(passed, the reasons why not, details to show) for one artifact file or directory."""
    if os.path.isdir(path):
        from jaxport.application import wiring
        from jaxport.application.generation.bundle_files import check_generative_files
        from jaxport.domain.bundle.manifest import EXAMPLES_FILE
        from jaxport.domain.path_kind import PathKind

        try:
            loader = wiring.converted_loader()
            directory = loader.open(path)
            if directory.kind is PathKind.CONVERTED:  # its files, its target against this machine, then every
                found = loader.verify(directory)  # model file opened and every variant called in a child
                manifest = directory.manifest
                if found.ok:  # its spec against its functions, its tokenizer parsed, its chat template compiled
                    check_generative_files(directory, wiring.text_codec, wiring.chat_template,
                                           lambda: {f.name: f.signature for f in manifest.functions})
                return found.ok, found.reasons, {"target": manifest.target, "functions": len(manifest.functions),
                                                 "cached": found.cached}
            bundle = wiring.bundle_loader().load(directory, verify=True, allowed_custom_calls=allowed)
            if bundle.manifest.examples:  # not read by a load: its digest is checked here
                directory.read(EXAMPLES_FILE)
            if directory.manifest.generation is not None:  # its functions' signatures, as generation loads them
                check_generative_files(directory, wiring.text_codec, wiring.chat_template, lambda: {
                    name: function.signature for name, function in loader.model(directory).functions.items()})
        except JaxportError as exc:
            return False, (str(exc),), {}
        return True, (), {"functions": len(bundle)}
    if not os.path.isfile(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    from jaxport.application.verify_artifact import verify_artifact

    report = verify_artifact(path, allowed_custom_calls=allowed)
    return report.ok, report.reasons, {"sealed": report.sealed, "sha256": report.digest}
