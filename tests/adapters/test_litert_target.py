"""The LiteRT target's two ports on a saved bundle: ``convert(job, staging)`` writes one model per function and
variant, ``load(root, manifest)`` runs them; as the conversion pipeline and the loader will call them.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from jaxport.adapters.storage.opened_directory import DiskDirectories
from jaxport.domain.path_kind import PathKind
from jaxport.adapters.flatbuffers.codec import decode_artifact
from jaxport.adapters.mlir.rewrite import ChildModuleForms
from jaxport.adapters.mlir.worker import ChildModuleWorker
from jaxport.domain.converted.manifest import ConvertedFunction, ConvertedManifest, WeightsTable
from jaxport.domain.calls.front import with_weights_bound
from jaxport.domain.targets.litert import PLAN, LiteRtOptions
from jaxport.domain.targets.plan import variant_shapes
from jaxport.domain.targets.ports import ConversionJob, ConvertedParts, FunctionJob
from jaxport.errors import ConversionError, UsageError
from tests.helpers import iree_model
from tests.helpers import litert_model as model

pytestmark = model.needs_converter


def job(bundle: Path, bindings: dict[str, list[dict[str, int]]], options: LiteRtOptions) -> ConversionJob:
    directory = DiskDirectories().open(bundle, PathKind.BUNDLE)
    manifest = directory.manifest
    functions = []
    for entry in manifest.functions:
        record = decode_artifact(directory.read(entry.file))
        n = len(manifest.weights) if entry.takes_params else 0
        signature = dataclasses.replace(with_weights_bound(record.signature, n), name=entry.name)
        shapes = variant_shapes(PLAN, entry.name, record, bindings.get(entry.name), nr_weights=n)  # as the pipeline
        functions.append(FunctionJob(entry.name, record, signature, (), shapes))
    weights = WeightsTable(manifest.params_tree, manifest.weights, "params.safetensors")
    return ConversionJob(tuple(functions), weights, str(bundle / "params.safetensors"), options, None,
                         ChildModuleForms(ChildModuleWorker()))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return iree_model.save_bundle(tmp_path_factory.mktemp("bundle") / "model")


@pytest.fixture(scope="module")
def converted(bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ConversionJob, ConvertedParts]:
    from jaxport.adapters.litert.converter import convert

    staging = tmp_path_factory.mktemp("staging")
    the_job = job(bundle, {"loss": [{"b": 2}, {"b": 5}]}, LiteRtOptions())
    return staging, the_job, convert(the_job, str(staging))


def test_convert_writes_a_model_per_function_and_binding_and_records_each_ones_weights(
        converted: tuple[Path, ConversionJob, ConvertedParts]) -> None:
    staging, _, parts = converted
    assert sorted(os.listdir(staging)) == ["loss.b=2.tflite", "loss.b=5.tflite", "predict.tflite"]
    assert {name: [(v.file, v.dims) for v in vs] for name, vs in parts.variants.items()} == {
        "predict": [("predict.tflite", ())],
        "loss": [("loss.b=2.tflite", (("b", 2),)), ("loss.b=5.tflite", (("b", 5),))]}
    assert parts.weights_file == ""
    details = parts.target_details
    assert details["converter"].startswith("litert-converter 0.5") and details["quantize"] == "none"
    weight_bytes = sum(w.nbytes for w in model.transformer_weights())
    assert details["models"]["predict.tflite"]["dynamic"] == ["b"]
    assert details["models"]["loss.b=5.tflite"]["dynamic"] == []
    assert all(m["constant_bytes"] >= weight_bytes for m in details["models"].values())


def test_load_runs_each_variant_on_the_callers_arrays_equal_to_jax(
        converted: tuple[Path, ConversionJob, ConvertedParts]) -> None:
    from jaxport.adapters.litert.runtime import load

    staging, the_job, parts = converted
    manifest = ConvertedManifest("litert", parts.target_details,
                                 tuple(ConvertedFunction(f.signature, parts.variants[f.name]) for f in the_job.functions))
    runtime = load(str(staging), manifest, {})
    for batch in (1, 6):
        ids = iree_model.token_ids(batch)
        predict = manifest.function("predict").variant_for({"b": batch})
        model.assert_close(runtime.run("predict", predict, [ids]), model.expected("predict", ids))
    ids, targets = iree_model.token_ids(5), iree_model.token_ids(5, seed=3)
    loss = manifest.function("loss").variant_for({"b": 5})
    model.assert_close(runtime.run("loss", loss, [ids, targets]), model.expected("loss", ids, targets))


def test_threads_calling_one_model_with_other_sizes_take_turns(
        converted: tuple[Path, ConversionJob, ConvertedParts]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from jaxport.adapters.litert.runtime import load

    staging, the_job, parts = converted
    manifest = ConvertedManifest("litert", parts.target_details,
                                 tuple(ConvertedFunction(f.signature, parts.variants[f.name]) for f in the_job.functions))
    runtime = load(str(staging), manifest, {})
    variant = manifest.function("predict").variant_for({"b": 1})
    batches = [1, 2, 3, 4] * 8
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda b: runtime.run("predict", variant, [iree_model.token_ids(b)])[0], batches))
    want = {b: model.expected("predict", iree_model.token_ids(b)) for b in set(batches)}
    for batch, got in zip(batches, results):
        model.assert_close([got], want[batch])


def test_a_function_litert_cannot_convert_leaves_the_staging_directory_empty(bundle: Path, tmp_path: Path) -> None:
    from jaxport.adapters.litert.converter import convert

    with pytest.raises(ConversionError, match=r"'loss' to LiteRT: LiteRT's converter cannot legalize the operation"):
        convert(job(bundle, {}, LiteRtOptions()), str(tmp_path))
    assert os.listdir(tmp_path) == []


def test_options_name_the_target_and_refuse_an_unknown_quantization() -> None:
    assert LiteRtOptions.target == "litert" and LiteRtOptions("int8-weights").quantize == "int8-weights"
    with pytest.raises(UsageError, match="Unknown quantization 'int16'"):
        LiteRtOptions("int16")


def test_the_registry_names_the_litert_ports_and_plan() -> None:
    from jaxport.application import target_adapters
    from jaxport.adapters.litert import converter as litert_converter, runtime as litert_runtime
    from jaxport.domain.targets.litert import PLAN
    from jaxport.domain.targets.registry import target

    entry = target("litert")
    assert entry.plan is PLAN and entry.options is LiteRtOptions and entry.manifest_path == "manifest.json"
    adapters = target_adapters.ADAPTERS["litert"]
    assert adapters.runtime is not None and adapters.steps is not None
    assert [target_adapters.converter(entry), adapters.runtime(), adapters.host_facts] == \
        [litert_converter.convert, litert_runtime.load, None]
