"""Which consumers can read and run an artifact: a table of JAX and TensorFlow releases and their windows.

A consumer reads an artifact when three things hold:

* its calling-convention window holds the artifact's version (``main``'s
  convention, :mod:`.calling_convention`);
* it reads StableHLO portable artifacts of the module's target version.
  StableHLO promises that a consumer reads every target up to its own
  version; a module for a newer target may still load when it uses nothing
  newer, and the table records where that was measured;
* (JAX only) it reads the Mosaic version of each Pallas TPU kernel (:mod:`.kernels`);
* (JAX only) its ``jax.export`` reader knows every field the artifact needs.
  JAX numbers its format's generations (``jax/_src/export/serialization.py``):
  2 float0, 3 custom pytree nodes, 4 PRNG key dtypes, 5 memory spaces and the
  32-bit device count, 6 shardings as ``NamedSharding``, 12 the JAX version,
  13 weak types (an older reader reads a weak-typed aval as strong: the
  verdict notes it, and an artifact written for that reader holds every aval
  strong, as its own ``jax.export`` writes them). A reader older than
  generation 5 reads the device count from the 16-bit field only, which
  jax.export 0.9.1 and later, and jaxport, no longer write: it sees "0
  devices" and refuses the call. Fields that an older reader skips without
  changing the call (the mesh's abstract device, the deduplicated tables that
  are written beside the legacy vectors) do not count;
* (JAX only) its jaxlib registers every custom-call target the modules call:
  the targets that a later JAX added to its allowlist
  (:data:`~.custom_calls.TARGETS_SINCE`, lgamma and digamma since 0.12.1)
  are refused for an older JAX.

Each row names its sources: *documented* facts come from JAX's sources at the
release's tag and TensorFlow's ``XlaCallModule``; *measured* ones from running
the release in a virtual environment of its own (``jax.export.deserialize``
and a call, or ``tf.XlaCallModule``, of a jaxport artifact targeting
StableHLO 1.15.0). The tests in ``tests/compat`` keep the JAX 0.8.3 and 0.9.2
rows measured.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .record import (
    JAX_VERSION_GENERATION, WEAK_TYPE_GENERATION, WRITTEN_SERIALIZATION_VERSION, ArtifactRecord, AvalRecord, DType,
    MemorySpace, TreeKind, TreeSpec
)
from .custom_calls import TARGETS_SINCE
from .sharding import NamedShardingRecord
from jaxport.domain.errors import ConsumerMismatchError, JaxportError, UsageError
from .module_format import stablehlo_version
from .kernels import Kernel, kernel_reasons, may_hold_kernels, older_than_writer
from .producer import release_key

#: The names a consumer is given by (``jax==0.9.2``, ``tf==2.21``), by runtime.
RUNTIME_NAMES = {"jax": "jax", "tf": "tf", "tensorflow": "tf"}


@dataclass(frozen=True, slots=True)
class Consumer:
    """One release of a runtime that reads artifacts, and what it reads.

    Attributes:
        runtime: ``"jax"`` (``jax.export.deserialize``) or ``"tf"`` (``tf.XlaCallModule``).
        version: the release (``"0.9.2"``).
        calling_conventions: the lowest and highest calling-convention version it reads.
        stablehlo: its own StableHLO version, when known: it reads every target up to it.
        loads_stablehlo: a newer target that was measured to load there, if any.
        serialization: (JAX) the newest generation of ``jax.export``'s format its reader knows.
        source: where the row's facts come from.
        mosaic: (JAX) the Mosaic version of the Pallas TPU kernels it exports, and so reads
            (``get_ir_version`` in forward-compatibility mode, ``jax/_src/tpu_custom_call.py``).
    """

    runtime: str
    version: str
    calling_conventions: tuple[int, int]
    stablehlo: str | None
    loads_stablehlo: str | None
    serialization: int | None
    source: str
    mosaic: int | None = None

    def __str__(self) -> str:
        return f"{'JAX' if self.runtime == 'jax' else 'TensorFlow'} {self.version}"

    @property
    def reads_stablehlo(self) -> str | None:
        """The newest StableHLO target known to load: its own version, or a newer one measured."""
        known = [v for v in (self.stablehlo, self.loads_stablehlo) if v is not None]
        return max(known, key=release_key) if known else None


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a consumer can read and run an artifact, and why not.

    Attributes:
        consumer: the consumer asked about.
        reasons: why it cannot (empty when it can).
        notes: what holds although it can (a target newer than StableHLO promises).
    """

    consumer: Consumer
    reasons: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the consumer can read and run the artifact."""
        return not self.reasons

    def __str__(self) -> str:
        if self.ok:
            return f"{self.consumer}: yes" + "".join(f"; note: {n}" for n in self.notes)
        return f"{self.consumer}: no: {'; '.join(self.reasons)} (source: {self.consumer.source})"


def _jax(version: str, stablehlo: str, serialization: int, measured: str, mosaic: int,
         target: str = "1.15.0") -> Consumer:
    return Consumer("jax", version, (9, 10), stablehlo, target if measured == "loads" else None,
                    serialization,
                    f"calling conventions 9-10, format generation {serialization} and Mosaic {mosaic}: "
                    f"jax/_src/export/_export.py, serialization.py and tpu_custom_call.py at tag jax-v{version} "
                    f"(documented); StableHLO {stablehlo}: stablehlo.get_current_version() of jaxlib "
                    f"{version} (measured); a jaxport artifact targeting StableHLO {target} "
                    + ("was read and called (measured)" if measured == "loads" else
                       "was refused: 'exported for 0 devices' (measured)"), mosaic=mosaic)


def _tf(version: str, highest: int, loads: bool) -> Consumer:
    outcome = ("ran it (measured)" if loads else
               "did not deserialize it: 'Cannot deserialize computation' (measured)")
    return Consumer("tf", version, (4, highest), None, "1.15.0" if loads else None, None,
                    f"calling conventions 4-{highest}: kVersionMinimumSupported in TensorFlow's "
                    "xla_call_module_loader.cc (documented) and "
                    f"tfxla.call_module_maximum_supported_version() = {highest} (measured); "
                    f"tf.XlaCallModule of a jaxport module targeting StableHLO 1.15.0 {outcome}")


def _jax_placed(version: str, stablehlo: str, serialization: int, mosaic: int, placed: str) -> Consumer:
    """A JAX release not installed here, whose facts ``placed`` says where they come from."""
    return Consumer("jax", version, (9, 10), stablehlo, None, serialization,
                    f"calling conventions 9-10, format generation {serialization}, StableHLO {stablehlo} "
                    f"and Mosaic {mosaic}: {placed}, from jax/_src/export/serialization.py and "
                    f"tpu_custom_call.py of the releases around it (documented)", mosaic=mosaic)


#: The consumers ``jaxport check --consumer`` knows, oldest first per runtime.
CONSUMERS: tuple[Consumer, ...] = (
    _jax("0.7.0", "1.12.1", 4, "refused", 4),
    _jax("0.7.1", "1.13.0", 4, "refused", 7),
    _jax("0.7.2", "1.13.0", 4, "refused", 7),
    _jax("0.8.0", "1.13.1", 4, "refused", 7),
    _jax("0.8.1", "1.13.3", 4, "refused", 8),
    _jax("0.8.2", "1.13.5", 5, "loads", 8),
    _jax("0.8.3", "1.13.5", 5, "loads", 8),
    _jax("0.9.0", "1.13.7", 6, "loads", 8),
    _jax("0.9.1", "1.13.8", 6, "loads", 9),
    _jax("0.9.2", "1.14.0", 8, "loads", 9),
    _jax("0.10.0", "1.16.0", 10, "loads", 9),
    _jax("0.10.1", "1.17.0", 11, "loads", 11),
    _jax("0.10.2", "1.17.0", 11, "loads", 11),
    # JAX 0.11 and 0.12 need Python 3.12. Their own jax.export targets 1.16.1 (0.11.0),
    # 1.18.0 (0.11.2, 0.12.0.1) and 1.22.0 (0.12.1), which jaxlib 0.10.2 (1.17.0) does not read past 1.16.1.
    _jax("0.11.0", "1.18.0", 11, "loads", 13),
    _jax_placed("0.11.1", "1.18.0", 12, 13,
                "released after generation 12 (jax-ml/jax 06d802b, 2026-07-29) and the refusal of HLO "
                "sharding protos (76eb902, 2026-08-03); StableHLO and Mosaic those of 0.11.0, which "
                "0.11.1's are not older than"),
    _jax("0.11.2", "1.20.0", 12, "loads", 15, target="1.22.0"),  # what jax.export 0.12.1 targets
    _jax_placed("0.12.0", "1.22.0", 12, 15,
                "taken from 0.12.0.1, the re-release of 0.12.0 (not installed here to measure)"),
    _jax("0.12.0.1", "1.22.0", 12, "loads", 15),
    _jax("0.12.1", "1.25.3", 13, "loads", 15),
    _tf("2.18.0", 9, False),
    _tf("2.19.0", 9, False),
    _tf("2.20.0", 10, True),
    _tf("2.21.0", 10, True),
)


def find_consumer(spec: str) -> Consumer:
    """The consumer that ``spec`` names: ``RUNTIME==VERSION`` (``jax==0.9.2``, ``tf==2.21``).

    Versions compare as pip compares them: ``2.21`` is ``2.21.0``.

    Raises:
        UsageError: ``spec`` is not of that form, or the table has no such consumer
            (the message lists the versions it has).

    >>> str(find_consumer("tensorflow==2.21"))
    'TensorFlow 2.21.0'
    """
    name, sep, version = spec.strip().partition("==")
    runtime = RUNTIME_NAMES.get(name.strip().lower())
    if not sep or runtime is None or not version.strip():
        raise UsageError(f"A consumer is written RUNTIME==VERSION, with RUNTIME one of "
                         f"{sorted(RUNTIME_NAMES)} (for instance jax==0.9.2), not {spec!r}")
    for consumer in CONSUMERS:
        if consumer.runtime == runtime and release_key(consumer.version) == release_key(version):
            return consumer
    known = ", ".join(c.version for c in CONSUMERS if c.runtime == runtime)
    raise UsageError(f"jaxport knows no {runtime} {version.strip()}: its table of consumers has "
                     f"{runtime} {known}")


def verdict(record: ArtifactRecord, consumer: Consumer, *, short_device_count: bool,
            kernels: Sequence[Kernel] = (), writer_jax: str | None = None) -> Verdict:
    """Whether ``consumer`` can read and run the artifact ``record``, and why not.

    Args:
        record: the artifact, its VJP chain included.
        consumer: the release asked about.
        short_device_count: whether the artifact also records its device count
            in the 16-bit field that readers before format generation 5 read.
        kernels: the kernels of its modules (:func:`needs_kernels` says whether any may hold one;
            the verifying process reads them).
        writer_jax: the JAX version that wrote its kernels; None: the one the artifact records.
    """
    reasons: list[str] = []
    writer = writer_jax or writer_of(record)
    reasons += kernel_reasons(kernels, str(consumer), consumer.mosaic, writer,
                              consumer.version if consumer.runtime == "jax" else None)
    notes: list[str] = []
    low, high = consumer.calling_conventions
    for table in record.chain:
        version = table.calling_convention_version
        if not low <= version <= high:
            reasons.append(f"calling convention {version} is outside {consumer}'s window [{low}, {high}]")
            break
    if consumer.serialization is not None:
        for generation, field in _fields_needed(record, short_device_count):
            if generation > consumer.serialization:
                reasons.append(f"{consumer}'s reader knows the format's generations up to "
                               f"{consumer.serialization}, and the artifact needs generation {generation} "
                               f"for {field}")
        weak = record.signature.weak_typed
        if weak and consumer.serialization < WEAK_TYPE_GENERATION:
            notes.append(f"{consumer} reads weak types as strong (format generations up to "
                         f"{consumer.serialization}; weak types since {WEAK_TYPE_GENERATION}): "
                         f"{', '.join(weak)} lose their weak type")
    reasons += _unknown_targets(record, consumer)
    target = max((v for v in (stablehlo_version(t.mlir_module_serialized[:300]) for t in record.chain)
                  if v is not None), key=release_key, default=None)
    reads = consumer.reads_stablehlo
    if target is not None and (reads is None or release_key(target) > release_key(reads)):
        newest = f"it reads StableHLO up to {reads}" if reads else "the StableHLO versions it reads are not known"
        reasons.append(f"the module targets StableHLO {target}, and {newest}")
    elif target is not None and consumer.stablehlo is not None and \
            release_key(target) > release_key(consumer.stablehlo):
        notes.append(f"the module targets StableHLO {target}, newer than {consumer}'s own "
                     f"{consumer.stablehlo}: outside StableHLO's promise, but measured to load")
    return Verdict(consumer, tuple(reasons), tuple(notes))


def stablehlo_for(consumer: Consumer) -> str | None:
    """The StableHLO version to write modules for ``consumer``: its own (StableHLO's promise), else
    the newest measured to load there (TensorFlow's rows); None when none is known."""
    return consumer.stablehlo or consumer.reads_stablehlo


def writer_of(record: ArtifactRecord) -> str | None:
    """The JAX version that wrote ``record``, as it records it (its seal's producer, else the
    version that format generation 12 records); None when it records none."""
    return record.producer.jax if record.producer is not None else record.jax_version


def needs_kernels(record: ArtifactRecord) -> bool:
    """Whether some module of ``record`` (its VJPs' included) may hold a kernel, whose versions only
    the verifying process reads."""
    return any(may_hold_kernels(table.mlir_module_serialized) for table in record.chain)


def written_for(record: ArtifactRecord, consumer: Consumer,
                write_module: Callable[[bytes, str], bytes],
                write_kernels: Callable[[bytes, int | None, bool], tuple[bytes, tuple[Kernel, ...]]] | None = None,
                writer_jax: str | None = None) -> ArtifactRecord:
    """``record`` (its VJP chain included) as ``consumer`` reads it, or why that cannot be.

    Each module newer than :func:`stablehlo_for` is written for that version by
    ``write_module``; a consumer whose reader predates format generation 13 gets
    every aval strong (:func:`strong_avals`) and the format version its own
    ``jax.export`` writes: 12 with the JAX version, or, before generation 12, 3
    without one. The result must then
    pass :func:`verdict`, the same decision ``jaxport check --consumer`` makes,
    so what is written for a consumer is what the check accepts.

    Args:
        record: the artifact.
        consumer: the release to write for.
        write_module: ``(module, version) -> module`` written for that older StableHLO;
            raises ``ValueError`` when the version lacks an operation the module uses.
        write_kernels: ``(module, mosaic, text) -> (module, kernels)``: the module's kernels, each
            Mosaic kernel newer than ``mosaic`` (the consumer's) written for it, and each one
            written as MLIR text when ``text`` (asked for a consumer older than ``writer_jax``,
            whose MLIR may not read this MLIR's bytecode); raises ``ValueError`` when one cannot
            be. Asked only for modules that may hold a kernel; None: their kernels are not read
            (and not written).
        writer_jax: the JAX version writing (this process's); None: the one the record names.

    Raises:
        ConsumerMismatchError: the consumer would not read or run the artifact; the
            reasons name what (operation, calling convention, field) and why.
    """
    target = stablehlo_for(consumer)
    generation = consumer.serialization

    kernels: list[Kernel] = []
    writer = writer_jax or writer_of(record)
    as_text = consumer.runtime == "jax" and older_than_writer(consumer.version, writer)

    def one(table: ArtifactRecord) -> ArtifactRecord:
        vjp = None if table.vjp is None else one(table.vjp)
        module = table.mlir_module_serialized
        if write_kernels is not None and may_hold_kernels(module):
            try:
                module, found = write_kernels(module, consumer.mosaic, as_text)
            except JaxportError:
                raise
            except ValueError as exc:
                raise ConsumerMismatchError(str(consumer), record.function_name, (str(exc),)) from None
            kernels.extend(found)
        written = stablehlo_version(module[:300])
        if target is not None and written is not None and release_key(written) > release_key(target):
            try:
                module = write_module(module, target)
            except JaxportError:
                raise
            except ValueError as exc:
                raise ConsumerMismatchError(str(consumer), record.function_name, (
                    f"{exc} (the StableHLO that {consumer} reads; the module targets {written})",)) from None
        if generation is not None and generation < WEAK_TYPE_GENERATION:
            table = strong_avals(table)
            table = (replace(table, serialization_version=WRITTEN_SERIALIZATION_VERSION, jax_version=None)
                     if generation < JAX_VERSION_GENERATION or table.jax_version is None else
                     replace(table, serialization_version=JAX_VERSION_GENERATION))
        return replace(table, mlir_module_serialized=module, vjp=vjp)

    written_record = one(record)
    found = verdict(written_record, consumer, short_device_count=False, kernels=kernels, writer_jax=writer)
    if not found.ok:
        raise ConsumerMismatchError(str(consumer), record.function_name,
                                    found.reasons + (f"source: {consumer.source}",))
    return written_record


def _unknown_targets(record: ArtifactRecord, consumer: Consumer) -> list[str]:
    """Why ``consumer`` cannot run the custom calls of ``record``'s modules that a later JAX added
    (a portable artifact keeps a target's name whole among its strings)."""
    reasons = []
    for table in record.chain:
        for target, since in TARGETS_SINCE.items():
            if target.encode() not in table.mlir_module_serialized:
                continue
            if consumer.runtime == "jax" and release_key(consumer.version) >= release_key(since):
                continue
            reasons.append(f"the module of '{table.function_name}' calls the custom-call target {target}, "
                           f"which JAX {since} first allows and {consumer}'s jaxlib does not register")
    return reasons


def strong_avals(table: ArtifactRecord) -> ArtifactRecord:
    """``table`` (not its VJP) with every aval strong, as a reader before format generation 13 reads
    it: an aval that was weak keeps its own entry of the table of unique avals (as the JAX of that
    generation writes it), told apart from its strong twin by its variant."""
    strong: dict[AvalRecord, AvalRecord] = {}
    twins: dict[AvalRecord, int] = {}
    for aval in table.in_avals + table.out_avals:
        if aval not in strong:
            wire = replace(aval, weak_type=False, variant=0)
            strong[aval] = replace(wire, variant=twins.get(wire, 0))
            twins[wire] = twins.get(wire, 0) + 1
    return replace(table, in_avals=tuple(strong[a] for a in table.in_avals),
                   out_avals=tuple(strong[a] for a in table.out_avals))


def _fields_needed(record: ArtifactRecord, short_device_count: bool) -> list[tuple[int, str]]:
    """The fields of the artifact that need a reader of some format generation, oldest first."""
    tables = record.chain
    avals = [a for t in tables for a in t.in_avals + t.out_avals]
    dtypes = {a.dtype for a in avals}
    needed = []
    if DType.FLOAT0 in dtypes:
        needed.append((2, "float0 arrays"))
    if any(_has_custom_node(t.in_tree) or _has_custom_node(t.out_tree) for t in tables):
        needed.append((3, "custom pytree nodes"))
    if dtypes & {DType.KEY_FRY, DType.KEY_RBG, DType.KEY_UNSAFE_RBG}:
        needed.append((4, "PRNG key arrays"))
    if not short_device_count:
        needed.append((5, "its device count, written in the 32-bit field only (older readers see 0 devices)"))
    if any(a.memory_space is not MemorySpace.DEVICE for a in avals):
        needed.append((5, "memory spaces other than the device's"))
    if any(isinstance(s, NamedShardingRecord) for t in tables for s in t.in_shardings + t.out_shardings):
        needed.append((6, "shardings as NamedSharding"))
    return needed


def _has_custom_node(spec: TreeSpec) -> bool:
    return spec.kind is TreeKind.CUSTOM or any(_has_custom_node(c) for c in spec.children)
