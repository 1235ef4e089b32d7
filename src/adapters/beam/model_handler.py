"""Apache Beam: a jaxport directory as a ``ModelHandler`` for ``RunInference``.

Each worker loads the directory once (``load_model``; shared across the
worker's processes where asked, as Beam's large models are); each batch of
examples (wire input name -> one row's array, without the batch axis) runs
as one call of the batch interface and yields one ``PredictionResult`` per
example, its inference the outputs by wire name. ``BatchElements`` is told
the batch sizes: at most the largest compiled size of a target compiled per
size, else ``max_batch_size``. :func:`checked` adds the row checks as a
preprocess function: a bad example goes alone to ``failed_preprocessing``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from apache_beam.ml.inference.base import KeyedModelHandler, ModelHandler, PredictionResult

import jaxport.errors  # noqa: F401 - pickled errors name their class by reference only where its module is loaded
from jaxport.domain.serving.engine_ports import BatchPort, LoadBatches


class JaxportModelHandler(ModelHandler):  # type: ignore[misc]
    """One function of a directory for ``RunInference``.

    Args:
        load: loads the directory's functions (and runs its golden examples), once per worker.
        function: the function's name.
        model_id: the ``PredictionResult``'s ``model_id`` (the directory's path).
        max_batch_size: the most examples ``BatchElements`` joins into one batch.
        share_across_processes: load one copy per machine, shared by its processes (Beam's large models).
    """

    def __init__(self, load: LoadBatches, function: str, model_id: str, *, max_batch_size: int,
                 share_across_processes: bool = False) -> None:
        super().__init__()
        self._load = load
        self._function = function
        self._model_id = model_id
        self._max_batch_size = max_batch_size
        self._share = share_across_processes

    def load_model(self) -> BatchPort:
        """The function, loaded (its golden examples run)."""
        return self._load()[self._function]

    def run_inference(self, batch: Sequence[Mapping[str, Any]], model: BatchPort,
                      inference_args: dict[str, Any] | None = None) -> Iterable[PredictionResult]:
        """One ``PredictionResult`` per example, the batch run as one call.

        Raises:
            BatchRowError: an example does not match the function (the message names its index in the batch).
        """
        return [PredictionResult(example, result, self._model_id)
                for example, result in zip(batch, model.rows(batch))]

    def batch_elements_kwargs(self) -> Mapping[str, Any]:
        """``BatchElements``' sizes: at most ``max_batch_size`` examples a batch."""
        return {"min_batch_size": 1, "max_batch_size": self._max_batch_size}

    def share_model_across_processes(self) -> bool:
        """Whether one loaded copy serves every process of a worker machine."""
        return self._share

    def get_metrics_namespace(self) -> str:
        """Beam's metrics of this handler are under ``jaxport``."""
        return "jaxport"


class RowCheck:
    """A preprocess function: returns an element whose example passes the function's checks alone, else
    raises (Beam puts that element alone in ``failed_preprocessing``; a batch that failed would take its
    good rows with it to ``failed_inferences``).

    Args:
        load: loads the directory's functions, once per process (shared with the handler's ``load_model``).
        function: the function's name.
        keyed: the elements are ``(key, example)`` pairs.
    """

    def __init__(self, load: LoadBatches, function: str, keyed: bool) -> None:
        self._load, self._function, self._keyed = load, function, keyed

    def __call__(self, element: Any) -> Any:
        """``element``, once its example passed.

        Raises:
            CallError: the example does not match the function (its names, arrays, dtypes, shapes, constraints).
        """
        example = element[1] if self._keyed else element
        self._load()[self._function].check_row(example)
        return element


def checked(handler: JaxportModelHandler, check: RowCheck, keyed: bool) -> Any:
    """``handler`` (in Beam's ``KeyedModelHandler`` when ``keyed``) with ``check`` as its preprocess function."""
    outer = KeyedModelHandler(handler) if keyed else handler
    return outer.with_preprocess_fn(check)
