"""The converted loader and the generator factory, each built through its constructor on ports of the test's
own: a runtime, a step runner, a directory and a sampler (no JAX, no NumPy, no file).

The loader takes a directory's runtime from the entry it is handed for the directory's target, and binds that
target's step runner to the runtime it opened; the generator factory runs a model's steps on the runner it
is handed, or on the one the model's target bound.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jaxport.application.conversion.loader import ConvertedLoader
from jaxport.application.conversion.model import ConvertedModel
from jaxport.application.conversion.verify_directory import DirectoryVerifier
from jaxport.application.generation.factory import GeneratorFactory
from jaxport.application.generation.generator import Generator
from jaxport.application.target_adapters import TargetAdapters
from jaxport.domain.artifact.record import AvalRecord, DType, TreeSpec
from jaxport.domain.calls.signature import Signature
from jaxport.domain.converted.manifest import ConvertedFunction, ConvertedManifest, Variant
from jaxport.domain.generation.ports import SamplingOptions, StepBatch
from jaxport.domain.generation.spec import CacheLeaf, GenerationSpec
from jaxport.domain.path_kind import PathKind
from jaxport.domain.opened_directory import OpenedDirectory
from jaxport.domain.ports import HostArray
from tests.helpers.fake_verdicts import FakeVerdictStore

VOCAB = 10
LEAF = TreeSpec.leaf()


def _function(name: str, length: str) -> ConvertedFunction:
    """A step taking tokens, positions (``("b", length)``) and a cache of one leaf (``tok``), giving logits."""
    avals = (AvalRecord(("b", length), DType.INT32), AvalRecord(("b", length), DType.INT32),
             AvalRecord(("b", "8"), DType.INT32))
    in_tree = TreeSpec.of_tuple(TreeSpec.of_tuple(LEAF, LEAF, TreeSpec.of_dict({"tok": LEAF})), TreeSpec.of_dict({}))
    return ConvertedFunction(Signature(name, in_tree, avals, LEAF, (AvalRecord(("b", length, str(VOCAB)),
                                                                               DType.FLOAT32),)), (Variant(""),))


SPEC = GenerationSpec(eos_ids=(9,), vocab_size=VOCAB, max_length=8,
                      cache=(CacheLeaf("tok", "int32", ("b", 8), 0, 1),))
MANIFEST = ConvertedManifest("onnx", {}, (_function("prefill", "s"), _function("decode", "1")), generation=SPEC)


@dataclass
class FakeDirectory:
    """A converted directory opened already (the :class:`~jaxport.domain.opened_directory.OpenedDirectory` port)."""

    manifest: ConvertedManifest
    root: str = "fake"
    kind: PathKind = PathKind.CONVERTED
    manifest_bytes: bytes = b"{}"
    checked: list[str] = field(default_factory=list)

    def read(self, file: str) -> bytes:
        raise AssertionError(f"{file} is not read: the model carries no tokenizer")

    def opened_by_path(self) -> str:
        self.checked.append("by path")
        return self.root

    def check_every_file(self) -> None:
        self.checked.append("every file")

    def weights(self) -> None:
        return None


@dataclass
class FakeDirectories:
    """Opens the one fake directory (the :class:`~jaxport.domain.opened_directory.Directories` port)."""

    directory: FakeDirectory

    def open(self, path: str | os.PathLike[str], *wanted: PathKind) -> OpenedDirectory[Any]:
        return self.directory


@dataclass
class FakeRuntime:
    """A target's runtime that answers every call with the option it was opened with (the runtime port)."""

    options: Mapping[str, Any]
    calls: list[str] = field(default_factory=list)

    def run(self, function: str, variant: Variant, args: Sequence[HostArray]) -> list[HostArray]:
        self.calls.append(function)
        return [self.options["answer"]]


class FakeStepRunner:
    """Steps whose next token is the last one plus 1 (one-hot logits as lists, the step runner port)."""

    def __init__(self, runtime: FakeRuntime | None = None) -> None:
        self.runtime = runtime
        self.steps: list[str] = []

    def start(self, batch: int) -> None:
        self.steps.clear()

    def step(self, function: str, batch: StepBatch) -> Any:
        self.steps.append(function)
        return [[1.0 if i == (tokens[last] + 1) % VOCAB else 0.0 for i in range(VOCAB)]
                for tokens, last in zip(batch.tokens, batch.last)]


class FakeSampler:
    """Picks the largest logit (the sampler port)."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def pick(self, logits: Sequence[Sequence[float]], options: SamplingOptions) -> list[int]:
        return [max(range(len(row)), key=row.__getitem__) for row in logits]


def _fake_runtime(root: str, manifest: ConvertedManifest, options: Mapping[str, Any]) -> FakeRuntime:
    return FakeRuntime(options)


def _fake_steps(runtime: FakeRuntime, model: ConvertedModel, spec: GenerationSpec) -> FakeStepRunner:
    return FakeStepRunner(runtime)


def _loader(directory: FakeDirectory) -> ConvertedLoader:
    entry: TargetAdapters[FakeRuntime] = TargetAdapters(lambda: _fake_runtime, _fake_steps)
    return ConvertedLoader(FakeDirectories(directory), DirectoryVerifier(FakeVerdictStore()), {"onnx": entry},
                           bundles=lambda opened: None)  # type: ignore[arg-type,return-value]


def test_a_converted_loader_takes_the_runtime_of_the_entry_it_is_handed() -> None:
    directory = FakeDirectory(MANIFEST)
    model = _loader(directory).load("fake", verify=False, answer="from the fake runtime")
    assert model["prefill"].run_flat([_Rows(1, 3), _Rows(1, 3), _Rows(1, 8)]) == ["from the fake runtime"]
    assert model.directory is directory and directory.checked == ["by path"]  # its files, then the runtime
    runner = model.own_steps(SPEC)
    assert isinstance(runner, FakeStepRunner) and runner.runtime is model["prefill"].runtime


def test_a_generator_factory_runs_the_step_runner_it_is_handed() -> None:
    loader = _loader(FakeDirectory(MANIFEST))
    handed = FakeStepRunner()
    scheduled: list[tuple[Generator, int, int]] = []
    factory = GeneratorFactory(loader, lambda model, spec: handed, FakeSampler,  # type: ignore[arg-type]
                               lambda blob, where: None, lambda template, where: None,  # type: ignore[arg-type,return-value]
                               lambda generator, slots, queue: scheduled.append((generator, slots, queue)))  # type: ignore[arg-type,return-value]
    model = loader.load("fake", verify=False, answer=0)
    assert factory.generator(model, checked=True).generate([1, 2, 3], 4) == [4, 5, 6, 7]
    assert handed.steps == ["prefill", "decode", "decode", "decode"]
    own = factory.generator(model)  # the model's target's runner, bound to the runtime the loader opened
    assert own.generate([5], 3) == [6, 7, 8] and own.runner is not handed
    served = factory.served(model, "gpt", 4, 16)  # served by the scheduler the factory was handed
    assert served.name == "gpt" and [(s, q) for _, s, q in scheduled] == [(4, 16)]
    assert isinstance(scheduled[0][0].runner, FakeStepRunner) and scheduled[0][0].runner is not handed


@dataclass(frozen=True)
class _Rows:
    """A host array of ``rows`` rows and ``length`` columns, as the front sees one."""

    rows: int
    length: int
    dtype: str = "int32"

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.length)
