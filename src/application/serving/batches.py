"""The batch interface: a loaded directory's functions called a batch at a time, by wire names, for an engine.

Ray Serve, Ray Data and Apache Beam hand a predictor batches of rows; this
is what they call, whatever the directory (a bundle on JAX, any converted
directory on its runtime). A batch is a mapping of the function's wire input
names (``arg0``, ``arg1/dense/w``, keyword names: the names of ``jaxport
serve`` and ``jaxport run``) to arrays whose leading axis is the batch; the
results come back by the wire output names (``output_0``, a dict result's
key paths). Each batch passes jaxport's call front before the runtime sees
it. A function whose inputs and outputs all lead with one dimension variable
runs a batch of any size: on a target compiled per size, the batch is split
into slices of at most the largest compiled size, each padded up to the
nearest compiled size as ``jaxport serve --batch`` pads a joined call
(:func:`jaxport.domain.serving.batching.split_rows`).

A bad row is refused with :class:`~jaxport.errors.BatchRowError`, naming its
index in the batch: a row whose shape or dtype differs from the others (a
ragged column, which an engine hands over as an array of objects) or from
the function's.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from jaxport.domain.calls.front import call_checker, check_arguments
from jaxport.domain.errors import BatchRowError, CallError, JaxportError, UsageError
from jaxport.domain.serving.batching import split_rows
from jaxport.domain.serving.options import ServeOptions
from jaxport.domain.serving.protocol import ServedFunction, WireTensor, batch_variable
from jaxport.domain.serving.engine_ports import RowArrays
from jaxport.domain.specs import ArraySpec
from jaxport.adapters.array_rows import NumpyRows
from jaxport.application.conversion.api import load_model, open_directory
from jaxport.application.serving.service import load_checked, served_functions


class BatchFunction:
    """One function of a loaded directory, called a batch at a time by its wire names.

    Args:
        function: the loaded function.
        arrays: makes one batch array of several (NumPy's).
        max_rows: the most rows of one call (a larger batch runs as several), or None: as many as the
            runtime takes (a target compiled per size: its largest compiled size).

    Attributes:
        name: the function's name.
        inputs: the inputs a batch holds, by wire name, in flat order.
        outputs: the outputs a batch's results hold, by wire name, in flat order.
        batch_variable: the dimension variable that every input and output leads with (None: batches
            run as they are, and rows are not joined).
        batch_sizes: the batch sizes that run without padding (empty: any size does).
    """

    def __init__(self, function: ServedFunction, arrays: RowArrays, max_rows: int | None = None) -> None:
        self.function = function
        self.name = function.name
        self.inputs: tuple[WireTensor, ...] = function.wire.inputs
        self.outputs: tuple[WireTensor, ...] = function.wire.outputs
        self._arrays = arrays
        self._max_rows = max_rows
        try:
            self.batch_variable: str | None = batch_variable(function.wire)
        except UsageError:
            self.batch_variable = None  # no batch dimension: a batch runs as it is, at the sizes it was exported for
        self.batch_sizes = function.compiled_sizes(self.batch_variable) if self.batch_variable else ()

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """The results of one batch, by wire output name.

        Args:
            batch: each wire input name -> its array, the batch along axis 0.

        Raises:
            BatchRowError: a row of a ragged column (an array of objects, one array a row) does not match
                the function or the column's row 0 (the message names its index).
            CallError (and its subclasses), ShapeAssertionError: the batch does not match the function
                (an input missing or unknown, a wrong dtype or shape, columns of different lengths).
        """
        leaves = self._checked(batch)
        return dict(zip((t.name for t in self.outputs), self._run(leaves)))

    def check(self, batch: Mapping[str, Any]) -> None:
        """Checks a batch as :meth:`__call__` does, without running it (raises its errors)."""
        self._checked(batch)

    def check_row(self, example: Mapping[str, Any]) -> None:
        """Checks one example (wire input name -> one row's array, without the batch axis) alone, as a batch
        of that one row: its names, each input an array, its dtypes, shapes and the function's constraints.

        Raises:
            CallError: naming the function and what is wrong (the example's position is the caller's to say).
        """
        if self.batch_variable is None:
            raise CallError(f"'{self.name}' has no batch dimension: its examples cannot be checked one by one")
        try:
            ordered = self.function.wire.order_inputs(list(example.items()))
            self.check({t.name: self._stack(k, [ordered[k]]) for k, t in enumerate(self.inputs)})
        except JaxportError as exc:
            reason = exc.reason if isinstance(exc, BatchRowError) else str(exc)  # its row 0 says nothing more
            raise CallError(f"The example to '{self.name}' is refused: {reason}") from exc

    def _checked(self, batch: Mapping[str, Any]) -> list[Any]:
        """The batch's arrays in flat order, checked by the call front."""
        leaves = self.function.wire.order_inputs(list(batch.items()))
        leaves = [self._column(k, leaf) for k, leaf in enumerate(leaves)]
        self.function.check(leaves)
        return leaves

    def rows(self, examples: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The results of each example (one row: wire input name -> array without the batch axis), by wire name.

        The examples run as one batch (:meth:`__call__`).

        Raises:
            BatchRowError: an example does not match the function (the message names its index).
        """
        if not examples:
            return []
        if self.batch_variable is None:
            raise CallError(f"'{self.name}' has no batch dimension (its inputs and outputs do not all lead "
                            "with one dimension variable): call it with whole batches, not rows")
        ordered = []
        for i, example in enumerate(examples):
            try:
                ordered.append(self.function.wire.order_inputs(list(example.items())))
            except JaxportError as exc:
                raise BatchRowError(self.name, i, str(exc)) from exc
        columns = {t.name: self._stack(k, [row[k] for row in ordered]) for k, t in enumerate(self.inputs)}
        results = self(columns)
        return [{name: out[i] for name, out in results.items()} for i in range(len(examples))]

    def _column(self, index: int, column: Any) -> Any:
        """A column as one array: an engine's ragged column (an array of objects) stacked row by row."""
        if str(getattr(column, "dtype", "")) != "object":
            return column
        return self._stack(index, list(column))

    def _stack(self, index: int, rows: Sequence[Any]) -> Any:
        """The rows of input ``index`` as one column, each row checked alone and against row 0 first.

        Raises:
            BatchRowError: a row is not an array, does not match the input, or differs from row 0.
        """
        tensor, spec = self.inputs[index], call_checker(self.function.signature).specs[index]
        for i, row in enumerate(rows):
            shape, dtype = getattr(row, "shape", None), getattr(row, "dtype", None)
            if shape is None or dtype is None:
                raise BatchRowError(self.name, i, f"its input '{tensor.name}' is a {type(row).__name__}, "
                                    "not an array")
            try:
                check_arguments((spec,), (ArraySpec((1, *(int(d) for d in shape)), str(dtype)),), (tensor.path,))
            except JaxportError as exc:
                raise BatchRowError(self.name, i, str(exc)) from exc
            if tuple(shape) != tuple(rows[0].shape):
                raise BatchRowError(self.name, i, f"its input '{tensor.name}' has the shape {list(shape)}, "
                                    f"row 0's {list(rows[0].shape)}: the rows of a batch share one shape")
        return self._arrays.stack(rows)

    def _run(self, leaves: list[Any]) -> list[Any]:
        """The flat results of a checked batch: split and padded onto the compiled sizes where needed."""
        rows = int(leaves[0].shape[0]) if self.batch_variable is not None else 0
        chunks = split_rows(rows, self.batch_sizes, self._max_rows) if self.batch_variable is not None else []
        if len(chunks) <= 1 and all(size == stop - start for start, stop, size in chunks):
            return list(self.function.run(leaves))
        if rows == 0:
            raise CallError(f"An empty batch to '{self.name}': it was compiled for {self.batch_variable} in "
                            f"{list(self.batch_sizes)} only, and an empty batch has no row to pad with")
        parts = []
        for start, stop, size in chunks:
            padding = size - (stop - start)
            call = [self._arrays.join([leaf[start:stop]], padding) for leaf in leaves]
            parts.append([out[:stop - start] for out in self.function.run(call)])
        return [self._arrays.join([part[k] for part in parts], 0) for k in range(len(self.outputs))]


class BatchModel(Mapping[str, BatchFunction]):
    """Every function of a loaded directory, by name, each called a batch at a time (:class:`BatchFunction`)."""

    def __init__(self, functions: Sequence[BatchFunction]) -> None:
        self._functions = {f.name: f for f in functions}

    def __getitem__(self, name: str) -> BatchFunction:
        try:
            return self._functions[name]
        except KeyError:
            raise CallError(f"No function '{name}' in this directory; it has {sorted(self._functions)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._functions)

    def __len__(self) -> int:
        return len(self._functions)


def load_batches(path: str | os.PathLike[str], *, max_rows: int | None = None,
                 check_examples: bool = True) -> BatchModel:
    """Every function of the directory at ``path``, to be called a batch at a time.

    Args:
        path: a bundle (run on JAX) or any directory that jaxport converted (run on its runtime, without JAX).
        max_rows: the most rows of one call of the runtime (a larger batch runs as several); None: the whole
            batch, or on a target compiled per size its largest compiled size.
        check_examples: run the directory's golden examples first, as ``jaxport serve`` does before it reports
            ready.

    Raises:
        ArtifactError: ``path`` is not a directory jaxport wrote, is damaged, or its golden examples fail here.
        ConversionError: a function has an input or output that the wire names cannot carry.
        MissingExtraError: the directory's runtime (or, for a bundle, JAX) is not installed.
        ValueError: ``max_rows`` is below 1.
    """
    if max_rows is not None and max_rows < 1:
        raise ValueError(f"max_rows must be at least 1, not {max_rows}")
    model = load_model(open_directory(path))
    functions = load_checked(path, ServeOptions(), model) if check_examples else served_functions(model)
    rows = NumpyRows()
    return BatchModel([BatchFunction(f, rows, max_rows) for f in functions])


_loaded: dict[tuple[str, int | None], BatchModel] = {}
_loading = threading.Lock()


def shared_batches(path: str, max_rows: int | None = None) -> BatchModel:
    """:func:`load_batches` of ``path``, once per process: an engine's model and its row checks (Beam's
    preprocessing) share one load. Raises as :func:`load_batches`."""
    with _loading:
        key = (path, max_rows)
        if key not in _loaded:
            _loaded[key] = load_batches(path, max_rows=max_rows)
        return _loaded[key]


class BatchPredictor:
    """One function of a directory as a callable class that an engine builds once per worker: Ray Data's
    ``map_batches`` takes it as it is (``ds.map_batches(BatchPredictor, fn_constructor_args=(path,),
    batch_format="numpy", concurrency=2)``).

    A batch is a mapping of columns (NumPy arrays, the batch along axis 0): the function's wire input names
    are its inputs; the result is the batch's other columns with the outputs added by wire name.

    Args:
        path: a bundle or a converted directory (loaded, and its golden examples run, when built).
        function: the function's name.
        max_rows: as :func:`load_batches`.
        error_column: None: a bad row fails the batch. A name: each row is checked alone, and a row that
            fails the function's checks gets its error's text in this column and None for each output; the
            other rows get their outputs and "" (the rows that pass run grouped by their inputs' shapes).
        id_column: the column whose value names a bad row in its error (Ray Data gives a batch no position
            in the data set): ``id=17: ...``.

    Raises:
        As :func:`load_batches`; CallError: the directory has no function ``function``.
    """

    def __init__(self, path: str | os.PathLike[str], function: str = "predict", *, max_rows: int | None = None,
                 error_column: str | None = None, id_column: str | None = None) -> None:
        self.function = load_batches(path, max_rows=max_rows)[function]
        self.error_column, self.id_column = error_column, id_column
        self._arrays = NumpyRows()

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """The batch's columns that are not inputs, and the outputs of its inputs, by wire name.

        Raises:
            As :meth:`BatchFunction.__call__`; CallError: a wire input is not a column of the batch.
        """
        names = {t.name for t in self.function.inputs}
        missing = sorted(names - set(batch))
        if missing:
            raise CallError(f"The batch to '{self.function.name}' has no column(s) {missing}: its columns are "
                            f"{sorted(batch)} and the function's inputs {sorted(names)}")
        others = {k: v for k, v in batch.items() if k not in names}
        if self.error_column is None:
            return {**others, **self.function({name: batch[name] for name in names})}
        return {**others, **self._row_by_row(batch, sorted(names))}

    def _row_by_row(self, batch: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
        """The outputs of the rows that pass their checks (each output None for the others), and the error
        column: each bad row's error, "" for the others."""
        assert self.error_column is not None
        count = len(batch[names[0]])
        rows = [{name: batch[name][i] for name in names} for i in range(count)]
        errors = [""] * count
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, row in enumerate(rows):
            try:
                self.function.check_row(row)
            except JaxportError as exc:
                errors[i] = f"{self._which(batch, i)}: {type(exc).__name__}: {exc}"
                continue
            groups.setdefault(tuple(tuple(getattr(row[n], "shape", ())) for n in names), []).append(i)
        outputs: dict[str, list[Any]] = {t.name: [None] * count for t in self.function.outputs}
        for indices in groups.values():
            for i, result in zip(indices, self.function.rows([rows[i] for i in indices])):
                for name, value in result.items():
                    outputs[name][i] = value
        return {**{name: self._arrays.objects(values) for name, values in outputs.items()},
                self.error_column: self._arrays.objects(errors)}

    def _which(self, batch: Mapping[str, Any], row: int) -> str:
        """A bad row, named by its id column's value (where the caller named one)."""
        if self.id_column is None or self.id_column not in batch:
            return "a row"
        value = batch[self.id_column][row]
        return f"the row {self.id_column}={getattr(value, 'item', lambda: value)()!r}"
