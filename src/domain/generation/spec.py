"""The generation spec: what a bundle's manifest says of a model that generates tokens.

A model that generates has two functions that take the weights first, then
the same kinds of step inputs, and return ``(logits, cache)``:

* the **prefill** runs over the prompt, ``tokens`` of shape ``(batch, length)``;
* the **decode** runs over one token per row, ``tokens`` of shape
  ``(batch, 1)`` or ``(batch,)``.

The step inputs are named by :class:`StepInput`, in the order the functions
take them: ``tokens``; ``positions`` (each token's place in its row: the
shape of ``tokens``, or a scalar shared by the batch); ``mask`` (``(batch,
max_length)``: 1 where a cache slot holds a token of the row, the current ones
included, 0 for padding and free slots); ``cache`` (any pytree of arrays).
The logits are ``(batch, length, vocab)`` (or ``(batch, vocab)`` for the
decode). Each cache leaf has a batch axis (or none: the leaf is shared by
the batch, as a write index) and a sequence axis (or none); an empty cache is
zeros of each leaf's shape, with the batch and the maximum length put in.

The spec is recorded under ``generation`` in ``manifest.json``; a reader that
does not know the key skips it (the bundle still loads as a plain bundle).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from jaxport.domain.calls.signature import DType
from jaxport.domain.checked_directory import JsonReader
from jaxport.domain.errors import ArtifactError, GenerationSpecError

#: The key of the spec in a bundle's manifest.
MANIFEST_KEY = "generation"
#: The file a bundled tokenizer is stored in.
TOKENIZER_FILE = "tokenizer.json"


class StepInput(Enum):
    """One argument that the prefill and the decode take after the weights."""

    TOKENS = "tokens"
    POSITIONS = "positions"
    MASK = "mask"
    CACHE = "cache"


@dataclass(frozen=True, slots=True)
class CacheLeaf:
    """One array of the cache.

    Attributes:
        name: its key path in the cache, as weights are named (``layers/0/k``; ``""`` for a lone array).
        dtype: its dtype name.
        shape: its dimensions as the prefill takes them (symbolic ones as text, ``"b"``).
        batch_axis: the axis of the batch, or None (shared by the batch).
        sequence_axis: the axis of the tokens' positions, or None.
    """

    name: str
    dtype: str
    shape: tuple[int | str, ...]
    batch_axis: int | None
    sequence_axis: int | None

    def empty_shape(self, batch: int, max_length: int) -> tuple[int, ...]:
        """The shape of this leaf in an empty cache for ``batch`` rows.

        >>> CacheLeaf("k", "float32", ("b", 2, 16, 4), 0, 2).empty_shape(3, 16)
        (3, 2, 16, 4)
        """
        dims = []
        for axis, d in enumerate(self.shape):
            dims.append(batch if axis == self.batch_axis else max_length if axis == self.sequence_axis
                        else int(d))
        return tuple(dims)

    def to_json(self) -> dict[str, Any]:
        """The leaf as JSON."""
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape),
                "batch_axis": self.batch_axis, "sequence_axis": self.sequence_axis}

    @staticmethod
    def from_json(r: JsonReader) -> CacheLeaf:
        """The leaf that :meth:`to_json` wrote.

        Raises:
            ArtifactError: naming where, when a field is malformed: a dimension neither an int nor a text,
                an unknown dtype, an axis beyond the rank (or both axes one), a dimension other than the
                batch's and the sequence's that is not a size.
        """
        shape = r.get("shape", list)
        if not all(isinstance(d, (int, str)) and not isinstance(d, bool) for d in shape):
            raise ArtifactError(f"{r.where}: 'shape' holds something other than ints and texts")
        dtype = r.get("dtype", str)
        if dtype not in {d.value for d in DType}:
            raise ArtifactError(f"{r.where}: 'dtype' {dtype!r} is not a dtype")
        axes = r.optional("batch_axis", int), r.optional("sequence_axis", int)
        if any(a is not None and not 0 <= a < len(shape) for a in axes) or (axes[0] is not None and axes[0] == axes[1]):
            raise ArtifactError(f"{r.where}: the axes {list(axes)} do not fit the shape {shape}")
        if any(not (isinstance(d, int) and d >= 0) for i, d in enumerate(shape) if i not in axes):
            raise ArtifactError(f"{r.where}: the shape {shape} has a dimension that is not a size beside the "
                                "batch's and the sequence's")
        return CacheLeaf(r.get("name", str), dtype, tuple(shape), *axes)


#: The cache axes a user gives: one ``(batch_axis, sequence_axis)`` for every leaf, or rules: leaf names or
#: patterns over them, in order, to pairs (:mod:`jaxport.domain.generation.cache_axes`).
CacheAxes = tuple[int | None, int | None] | Mapping[str, tuple[int | None, int | None]]


@dataclass(frozen=True)
class GenerationSpec:
    """Which functions of a bundle generate, and how (see the module's docstring).

    Given to :func:`jaxport.save_bundle` (``generation=``) with what the user
    knows; the save fills in, from the functions, what they say (the cache's
    leaves, the maximum length, the vocabulary size) and checks the rest.

    Attributes:
        prefill, decode: the names of the two functions in the bundle.
        prefill_inputs: the prefill's arguments after the weights, in order.
        decode_inputs: the decode's (None: those of the prefill).
        cache_axes: ``(batch_axis, sequence_axis)`` of every cache leaf, None
            for an axis a leaf lacks; integer leaves of lower rank (indices:
            a scalar is shared by the batch, one of shape ``(b,)`` is per
            row) are recognised. Or rules, the first that matches a leaf's
            name applying: ``{"*/end_index": (0, None), "*": (0, 2)}``
            (shell-style patterns over ``/``-joined names, ``*`` crossing
            ``/``); every leaf must match one, every rule apply to one.
        eos_ids: the tokens that end a row's text.
        pad_id: the token that pads a shorter prompt of a batch.
        vocab_size: the size of the logits' last axis (None: read from the prefill).
        max_length: the tokens the cache holds (None: its leaves' sequence length).
        tokenizer: at save, the path of a ``tokenizer.json`` to bundle; in a
            manifest, the bundled file's name.
        chat_template: a Jinja template of a chat (as ``tokenizer_config.json``
            holds one), rendered with ``messages`` and ``add_generation_prompt``.
        cache: the cache's leaves (filled in at save).
    """

    prefill: str = "prefill"
    decode: str = "decode"
    prefill_inputs: tuple[StepInput, ...] = (StepInput.TOKENS, StepInput.POSITIONS, StepInput.CACHE)
    decode_inputs: tuple[StepInput, ...] | None = None
    cache_axes: CacheAxes = (0, 1)
    eos_ids: tuple[int, ...] = ()
    pad_id: int = 0
    vocab_size: int | None = None
    max_length: int | None = None
    tokenizer: str | None = None
    chat_template: str | None = None
    cache: tuple[CacheLeaf, ...] = field(default=())

    @property
    def steps(self) -> tuple[tuple[str, tuple[StepInput, ...]], ...]:
        """Each function's name and inputs: the prefill's, then the decode's."""
        return ((self.prefill, self.prefill_inputs),
                (self.decode, self.prefill_inputs if self.decode_inputs is None else self.decode_inputs))

    def takes(self, function: str, kind: StepInput) -> bool:
        """Whether ``function`` (a name of :attr:`steps`) takes an input of ``kind``."""
        return any(kind in inputs for name, inputs in self.steps if name == function)

    def to_json(self) -> dict[str, Any]:
        """The spec as the manifest's ``generation`` table (after the save filled it in)."""
        (_, prefill_inputs), (_, decode_inputs) = self.steps
        doc: dict[str, Any] = {
            "prefill": {"function": self.prefill, "inputs": [k.value for k in prefill_inputs]},
            "decode": {"function": self.decode, "inputs": [k.value for k in decode_inputs]},
            "cache": {"max_length": self.max_length, "init": "zeros",
                      "leaves": [leaf.to_json() for leaf in self.cache]},
            "eos_ids": list(self.eos_ids), "pad_id": self.pad_id, "vocab_size": self.vocab_size,
        }
        if self.tokenizer is not None:
            doc["tokenizer"] = {"file": self.tokenizer}
        if self.chat_template is not None:
            doc["chat_template"] = self.chat_template
        return doc

    @staticmethod
    def from_json(doc: Any, where: str) -> GenerationSpec:
        """The spec that :meth:`to_json` wrote, read from the manifest at ``where``.

        Raises:
            ArtifactError: naming ``where`` and the field, when it is malformed.
        """
        r = JsonReader(doc, where)
        steps = [(r.child(key).get("function", str), _inputs(r.child(key))) for key in ("prefill", "decode")]
        cache = r.child("cache")
        if cache.get("init", str) != "zeros":
            raise ArtifactError(f"{cache.where}: 'init' is not 'zeros'")
        leaves = tuple(CacheLeaf.from_json(leaf) for leaf in cache.child_list("leaves"))
        ids = r.get("eos_ids", list)
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise ArtifactError(f"{where}: 'eos_ids' holds something other than ints")
        tokenizer = r.child("tokenizer").get("file", str) if "tokenizer" in r.doc else None
        chat = r.get("chat_template", str) if "chat_template" in r.doc else None
        for (_, inputs), key in zip(steps, ("prefill", "decode")):
            if StepInput.TOKENS not in inputs or StepInput.CACHE not in inputs or len(set(inputs)) != len(inputs):
                raise ArtifactError(f"{where}: {key}: 'inputs' {[k.value for k in inputs]} are not tokens and a "
                                    "cache, each once")
        pad, vocab, length = r.get("pad_id", int), r.get("vocab_size", int), cache.get("max_length", int)
        for leaf in leaves:
            if leaf.sequence_axis is not None and isinstance(leaf.shape[leaf.sequence_axis], int) and \
                    leaf.shape[leaf.sequence_axis] != length:
                raise ArtifactError(f"{where}: the cache's leaf '{leaf.name}' holds {leaf.shape[leaf.sequence_axis]} "
                                    f"positions, 'max_length' is {length}")
        outside = [i for i in (*ids, pad) if not 0 <= i < vocab]
        if outside:  # save checks them: a manifest changed (and re-sealed) since
            raise ArtifactError(f"{where}: the end-of-text and padding ids {outside} are outside the vocabulary "
                                f"[0, {vocab})")
        if length < 1:
            raise ArtifactError(f"{where}: the cache's 'max_length' {length} is not a length")
        return GenerationSpec(steps[0][0], steps[1][0], steps[0][1], steps[1][1], (0, 1), tuple(ids), pad, vocab,
                              length, tokenizer, chat, leaves)

    def lines(self) -> list[str]:
        """What ``jaxport inspect`` says of the spec.

        >>> spec = GenerationSpec(eos_ids=(2,), vocab_size=16, max_length=32,
        ...                       cache=(CacheLeaf("k", "float32", ("b", 32, 8), 0, 1),))
        >>> print("\\n".join(spec.lines()))
        generation: prefill 'prefill' (tokens, positions, cache), decode 'decode' (tokens, positions, cache)
          vocabulary 16, end of text [2], padding 0, cache of 32 tokens:
            k  float32[b,32,8]  batch axis 0, sequence axis 1
        """
        steps = ", ".join(f"{kind} '{name}' ({', '.join(k.value for k in inputs)})"
                          for kind, (name, inputs) in zip(("prefill", "decode"), self.steps))
        lines = [f"generation: {steps}",
                 f"  vocabulary {self.vocab_size}, end of text {list(self.eos_ids)}, padding {self.pad_id}, "
                 f"cache of {self.max_length} tokens:"]
        rows = []
        for leaf in self.cache:
            axes = (f"batch axis {leaf.batch_axis}" if leaf.batch_axis is not None else "shared by the batch")
            if leaf.sequence_axis is not None:
                axes += f", sequence axis {leaf.sequence_axis}"
            rows.append((leaf.name or "(the cache)", f"{leaf.dtype}[{','.join(str(d) for d in leaf.shape)}]", axes))
        widths = [max((len(r[i]) for r in rows), default=0) for i in range(2)]
        lines.extend(f"    {a:<{widths[0]}}  {b:<{widths[1]}}  {c}" for a, b, c in rows)
        if self.tokenizer is not None:
            lines.append(f"  tokenizer: {self.tokenizer}" + (", with a chat template" if self.chat_template else ""))
        return lines



def _inputs(r: JsonReader) -> tuple[StepInput, ...]:
    names = r.get("inputs", list)
    try:
        return tuple(StepInput(n) for n in names)
    except ValueError as exc:
        raise ArtifactError(f"{r.where}: 'inputs' names an unknown input: {exc}") from exc


def as_inputs(names: Sequence[str | StepInput], where: str) -> tuple[StepInput, ...]:
    """Step inputs given as names or members (``("tokens", "cache")``), checked.

    Raises:
        GenerationSpecError: naming ``where``, for an unknown or repeated name, or without tokens and a cache.
    """
    try:
        kinds = tuple(StepInput(n) if not isinstance(n, StepInput) else n for n in names)
    except ValueError as exc:
        raise GenerationSpecError(where, f"{exc}; the inputs are {[k.value for k in StepInput]}") from exc
    if len(set(kinds)) != len(kinds):
        raise GenerationSpecError(where, f"an input is named twice in {[k.value for k in kinds]}")
    for needed in (StepInput.TOKENS, StepInput.CACHE):
        if needed not in kinds:
            raise GenerationSpecError(where, f"its inputs {[k.value for k in kinds]} lack {needed.value!r}")
    return kinds
