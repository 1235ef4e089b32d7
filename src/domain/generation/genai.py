"""Whether a generative model's ONNX conversion fits ONNX Runtime GenAI, and its ``genai_config.json``.

ONNX Runtime GenAI runs one decoder for the prefill and every decode step:
``input_ids (batch, length)``, ``attention_mask (batch, total length)`` and,
per layer, ``past_key_values.%d.key`` / ``.value`` of ``(batch, heads,
sequence, head_size)`` in; ``logits (batch, length, vocab)`` and
``present.%d.key`` / ``.value`` out. A jaxport generative bundle fits when
its prefill is that decoder: it takes ``(tokens, mask, cache)`` (and so does
the decode), any prompt length, a mask whose length is a dimension of its
own (GenAI's grows with each token; jaxport gives the whole cache's), and a
cache of key/value pairs, one after the other, each ``(batch, heads,
max_length, head_size)``. The cache is a fixed one, so the config sets
``past_present_share_buffer``: GenAI binds one buffer per leaf as both the
past and the present, and the model writes the new tokens' slots in place.

:func:`plan_genai` says how: the prefill's inputs and outputs renamed to
GenAI's names (in a model file of its own, :data:`GENAI_MODEL`) and the
config, or, as a text, why the model does not fit (the ONNX directory's
manifest records it, and no config is written).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jaxport.domain.artifact.record import AvalRecord
from jaxport.domain.calls.signature import Signature
from jaxport.domain.generation.spec import GenerationSpec, StepInput

#: GenAI's configuration file, in the ONNX directory's root.
GENAI_CONFIG = "genai_config.json"
#: The prefill's model with GenAI's input and output names (its weights read from the same file).
GENAI_MODEL = "genai_decoder.onnx"
#: The key of the ONNX directory's ``target_details`` that says what was written for GenAI, or why nothing was.
DETAILS_KEY = "onnxruntime_genai"

_IDS = ("int32", "int64")
_FLOATS = ("float32", "float16")
_INPUTS = (StepInput.TOKENS, StepInput.MASK, StepInput.CACHE)


@dataclass(frozen=True)
class GenAIPlan:
    """What the ONNX converter writes for GenAI.

    Attributes:
        renames: the prefill model's input and output names -> GenAI's.
        config: the ``genai_config.json`` document.
    """

    renames: dict[str, str]
    config: dict[str, Any]


def plan_genai(spec: GenerationSpec, prefill: Signature) -> GenAIPlan | str:
    """The plan for ``prefill`` (the converted prefill's signature), or why the model does not fit.

    >>> plan_genai(GenerationSpec(), None)  # doctest: +ELLIPSIS
    "GenAI's decoder takes (tokens, mask, cache) ...; this model's prefill takes (tokens, positions, cache)"
    """
    for name, inputs in spec.steps:
        if inputs != _INPUTS:
            return (f"GenAI's decoder takes (tokens, mask, cache) for the prefill and the decode alike; this "
                    f"model's {'prefill' if name == spec.prefill else 'decode'} takes "
                    f"({', '.join(k.value for k in inputs)})")
    tokens, mask, *cache = prefill.in_avals
    why = _why_not_ids(tokens, mask) or _why_not_cache(spec, cache)
    if why:
        return why
    logits, *present = prefill.out_avals
    if (len(logits.shape) != 3 or logits.dtype.value not in _FLOATS or logits.shape[:2] != tokens.shape
            or logits.shape[2] != str(spec.vocab_size)):
        return (f"GenAI reads logits (batch, length, vocab) of float32 or float16; the prefill's first result "
                f"is {logits}")
    if [(a.shape, a.dtype) for a in present] != [(a.shape, a.dtype) for a in cache]:
        return "the prefill's results after the logits are not the cache it takes, leaf for leaf"
    layers = len(cache) // 2
    renames = {prefill.input_names[0]: "input_ids", prefill.input_names[1]: "attention_mask",
               prefill.output_names[0]: "logits"}
    for i in range(layers):
        for j, kind in enumerate(("key", "value")):
            renames[prefill.input_names[2 + 2 * i + j]] = f"past_key_values.{i}.{kind}"
            renames[prefill.output_names[1 + 2 * i + j]] = f"present.{i}.{kind}"
    return GenAIPlan(renames, _config(spec, cache[0], layers))


def _why_not_ids(tokens: AvalRecord, mask: AvalRecord) -> str:
    if len(tokens.shape) != 2 or tokens.dtype.value not in _IDS or tokens.shape[1].isdigit():
        return f"GenAI gives input_ids (batch, length) of int32 or int64, any length; the prefill takes {tokens}"
    if len(mask.shape) != 2 or mask.dtype.value not in _IDS or mask.shape[1].isdigit() or \
            mask.shape[1] == tokens.shape[1] or mask.shape[0] != tokens.shape[0]:
        return (f"GenAI gives an attention_mask (batch, total length) of int32 or int64, its length a dimension "
                f"of its own that grows with each token; the prefill takes a mask {mask} beside tokens {tokens}")
    return ""


def _why_not_cache(spec: GenerationSpec, cache: list[AvalRecord]) -> str:
    leaves = spec.cache
    if not leaves or len(leaves) % 2:
        return (f"GenAI's cache is a key and a value per layer; this model's has {len(leaves)} "
                f"{'leaf' if len(leaves) == 1 else 'leaves'}")
    first = cache[0]
    for leaf, aval in zip(leaves, cache):
        name = leaf.name or "(the cache)"
        if len(aval.shape) != 4 or leaf.batch_axis != 0 or leaf.sequence_axis != 2:
            return (f"GenAI's cache leaves are (batch, heads, sequence, head_size); the leaf '{name}' is "
                    f"{aval} with batch axis {leaf.batch_axis} and sequence axis {leaf.sequence_axis}")
        if aval.dtype.value not in _FLOATS or aval.shape[2] != str(spec.max_length):
            return f"GenAI's cache leaves are float32 or float16 of the cache's length; the leaf '{name}' is {aval}"
        if (aval.shape, aval.dtype) != (first.shape, first.dtype) or not aval.shape[1].isdigit() \
                or not aval.shape[3].isdigit():
            return (f"GenAI's cache leaves are all alike, of a fixed number of heads and head size; the leaf "
                    f"'{name}' is {aval}, the first {first}")
    return ""


def _config(spec: GenerationSpec, leaf: AvalRecord, layers: int) -> dict[str, Any]:
    heads, head_size = int(leaf.shape[1]), int(leaf.shape[3])
    return {
        "model": {
            "type": "decoder", "vocab_size": spec.vocab_size, "context_length": spec.max_length,
            "bos_token_id": spec.pad_id, "eos_token_id": list(spec.eos_ids),
            "pad_token_id": spec.pad_id,
            "decoder": {
                "filename": GENAI_MODEL, "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": heads,
                "head_size": head_size, "hidden_size": heads * head_size,
                "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                           "past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
            },
        },
        "search": {"max_length": spec.max_length, "past_present_share_buffer": True, "do_sample": False,
                   "num_beams": 1, "num_return_sequences": 1, "top_k": 1, "top_p": 1.0, "temperature": 1.0},
    }


def describe_genai(details: Any) -> str:
    """What ``jaxport inspect`` says of the directory's GenAI files ("" where the manifest says nothing).

    >>> describe_genai({"config": "genai_config.json", "model": "genai_decoder.onnx"})
    'ONNX Runtime GenAI runs it (genai_config.json)'
    >>> describe_genai({"unfit": "its cache is not GenAI's"})
    "not for ONNX Runtime GenAI: its cache is not GenAI's"
    """
    if not isinstance(details, dict):
        return ""
    if "config" in details:
        return f"ONNX Runtime GenAI runs it ({details['config']})"
    return f"not for ONNX Runtime GenAI: {details.get('unfit', '?')}"
