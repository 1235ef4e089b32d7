"""Whether a generative model fits ONNX Runtime GenAI: the plan, or the reason it names (no JAX, no ONNX)."""

from __future__ import annotations

import dataclasses

import pytest

from jaxport.domain.artifact.record import AvalRecord, DType, TreeKind, TreeSpec
from jaxport.domain.calls.signature import Signature
from jaxport.domain.generation.genai import GenAIPlan, describe_genai, plan_genai
from jaxport.domain.generation.spec import CacheLeaf, GenerationSpec, StepInput

LEAF = TreeSpec(TreeKind.LEAF)
KV = ("b", "2", "16", "4")


def _aval(shape: tuple[str, ...], dtype: DType = DType.FLOAT32) -> AvalRecord:
    return AvalRecord(shape, dtype)


def _fitting(layers: int = 2) -> tuple[GenerationSpec, Signature]:
    leaves = tuple(CacheLeaf(f"{i}/{kind}", "float32", ("b", 2, 16, 4), 0, 2)
                   for i in range(layers) for kind in ("key", "value"))
    spec = GenerationSpec(prefill_inputs=(StepInput.TOKENS, StepInput.MASK, StepInput.CACHE), eos_ids=(31,),
                          vocab_size=32, max_length=16, cache=leaves)
    layer = TreeSpec(TreeKind.DICT, (LEAF, LEAF), ("key", "value"))
    cache = TreeSpec(TreeKind.LIST, (layer,) * layers)
    in_tree = TreeSpec(TreeKind.TUPLE, (TreeSpec(TreeKind.TUPLE, (LEAF, LEAF, cache)), TreeSpec(TreeKind.DICT)))
    out_tree = TreeSpec(TreeKind.TUPLE, (LEAF, cache))
    ids = [_aval(("b", "s"), DType.INT32), _aval(("b", "t"), DType.INT32)]
    kv = [_aval(KV)] * (2 * layers)
    return spec, Signature("prefill", in_tree, (*ids, *kv), out_tree, (_aval(("b", "s", "32")), *kv))


def test_a_fitting_prefill_gets_genais_names_and_a_config_of_a_shared_fixed_cache() -> None:
    spec, prefill = _fitting()
    plan = plan_genai(spec, prefill)
    assert isinstance(plan, GenAIPlan)
    assert plan.renames == {
        "arg0": "input_ids", "arg1": "attention_mask", "output_0": "logits",
        "arg2/0/key": "past_key_values.0.key", "arg2/0/value": "past_key_values.0.value",
        "arg2/1/key": "past_key_values.1.key", "arg2/1/value": "past_key_values.1.value",
        "output_1": "present.0.key", "output_2": "present.0.value",
        "output_3": "present.1.key", "output_4": "present.1.value"}
    decoder = plan.config["model"]["decoder"]
    assert (decoder["num_hidden_layers"], decoder["num_attention_heads"], decoder["head_size"],
            decoder["hidden_size"]) == (2, 2, 4, 8)
    assert plan.config["model"]["eos_token_id"] == [31]
    assert plan.config["search"]["max_length"] == 16 and plan.config["search"]["past_present_share_buffer"]


def _changed(what: str) -> tuple[GenerationSpec, Signature]:
    spec, prefill = _fitting()
    ins, outs = list(prefill.in_avals), list(prefill.out_avals)
    if what == "decode inputs":
        spec = dataclasses.replace(spec, decode_inputs=(StepInput.TOKENS, StepInput.POSITIONS, StepInput.CACHE))
    elif what == "static length":
        ins[0] = _aval(("b", "4"), DType.INT32)
    elif what == "float mask":
        ins[1] = _aval(("b", "t"), DType.FLOAT32)
    elif what == "odd cache":
        spec = dataclasses.replace(spec, cache=spec.cache[:3])
    elif what == "sequence axis":
        spec = dataclasses.replace(spec, cache=tuple(dataclasses.replace(leaf, sequence_axis=1) for leaf in spec.cache))
    elif what == "other heads":
        ins[5] = outs[4] = _aval(("b", "4", "16", "2"))
    elif what == "logits":
        outs[0] = _aval(("b", "32"))
    elif what == "results":
        outs[1] = _aval(("b", "2", "16", "4"), DType.FLOAT16)
    return spec, dataclasses.replace(prefill, in_avals=tuple(ins), out_avals=tuple(outs))


@pytest.mark.parametrize("what, why", [
    ("decode inputs", "this model's decode takes (tokens, positions, cache)"),
    ("static length", "GenAI gives input_ids (batch, length) of int32 or int64, any length; the prefill takes "
                      "int32[b,4]"),
    ("float mask", "the prefill takes a mask float32[b,t]"),
    ("odd cache", "a key and a value per layer; this model's has 3 leaves"),
    ("sequence axis", "the leaf '0/key' is float32[b,2,16,4] with batch axis 0 and sequence axis 1"),
    ("other heads", "the leaf '1/value' is float32[b,4,16,2], the first float32[b,2,16,4]"),
    ("logits", "the prefill's first result is float32[b,32]"),
    ("results", "the prefill's results after the logits are not the cache it takes"),
])
def test_a_model_that_does_not_fit_gets_the_reason_naming_what(what: str, why: str) -> None:
    reason = plan_genai(*_changed(what))
    assert isinstance(reason, str) and why in reason, reason
    assert describe_genai({"unfit": reason}) == f"not for ONNX Runtime GenAI: {reason}"
