"""The call-side front that every runtime shares: flatten, check, unflatten.

A call through a :class:`~jaxport.domain.targets.ports.TargetRuntime` goes
``flatten_call`` (the caller's ``(args, kwargs)`` against the function's
:class:`~.signature.Signature`), ``check_call`` (ranks, dtypes, constant
dimensions, then the dimension variables solved from the concrete shapes and
every shape assertion and user constraint checked), the runtime's ``run`` on
the flat arrays, then ``unflatten_results``. The errors are those of
:mod:`jaxport.errors`, with JAX's paths (``args[0]['w']``) and wording, so a
runtime that checks nothing itself refuses a bad call with jaxport's message.

Pytrees here are plain Python containers: tuples, lists, dicts, ``None``,
and leaves (anything else: an array). A custom node of the exported tree
(a namedtuple, a registered class) is given as a tuple or list of its
children, and comes back as a tuple: this module knows no class registry.
Leaves are only read through ``shape`` and ``str(dtype)``: no NumPy here.

:func:`check_arguments` is the check on flat abstract values that an
:class:`Exported` also runs when it is called (eagerly or while tracing),
before anything is executed. Every function here takes the one
:class:`~.signature.Signature`, an export's (``record.signature``) or a
converted function's (its manifest's).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jaxport.domain.errors import ArtifactError, CallError, DtypeMismatchError, TreeDifference, TreeMismatchError
from jaxport.domain.specs import ArraySpec
from jaxport.domain.symbolic import DimExpr, solve_call
from jaxport.domain.symbolic.json_trees import constraint_scope, parse_dims
from jaxport.domain.symbolic.plan import Shape
from jaxport.domain.symbolic.solve import check_shape
from .signature import AvalRecord, Signature
from .trees import TreeKind, TreeSpec


def flatten_call(function: Signature, args: Sequence[Any], kwargs: Mapping[str, Any], *,
                 weights_bound: bool | None = None) -> list[Any]:
    """The flat leaves of ``(args, kwargs)``, in the exported flattening order.

    ``weights_bound``: the function's weights are bound (see :func:`with_weights_bound`),
    so the error's message says so; None: when ``function.nr_weights`` is not 0.

    Raises:
        TreeMismatchError: the call's pytree differs from ``function.in_tree``;
            the message lists each difference by path, as ``Exported.call`` does.
    """
    leaves: list[Any] = []
    differences: list[TreeDifference] = []
    _flatten(function.in_tree, (tuple(args), dict(kwargs)), (), leaves, differences)
    if differences:
        bound = function.nr_weights > 0 if weights_bound is None else weights_bound
        raise TreeMismatchError(function.name, differences, weights_bound=bound)
    return leaves


def flatten_tree(spec: TreeSpec, tree: Any) -> list[Any]:
    """The leaves of ``tree``, a pytree of plain containers of the structure ``spec`` (see
    :func:`build_tree`).

    Raises:
        ValueError: ``tree`` has another structure.
    """
    leaves: list[Any] = []
    differences: list[TreeDifference] = []
    _flatten(spec, tree, (), leaves, differences)
    if differences:
        raise ValueError(f"The pytree differs from its structure: {differences[0]}")
    return leaves


def _flatten(spec: TreeSpec, value: Any, path: tuple[str, ...], leaves: list[Any],
             differences: list[TreeDifference]) -> None:
    # Recursive like the pytrees it walks (they come from a caller's Python objects).
    def differ(in_call: str, exported: str, explanation: str) -> None:
        differences.append(TreeDifference(_args_kwargs_path(path), in_call, exported, explanation))

    kind = spec.kind
    if kind is TreeKind.LEAF:
        if value is None or isinstance(value, (tuple, list, dict)):
            differ(str(type(value)), "pytree leaf", "their Python types differ")
        else:
            leaves.append(value)
        return
    if kind is TreeKind.NONE:
        if value is not None:
            differ(str(type(value)), str(type(None)), "their Python types differ")
        return
    if kind is TreeKind.DICT:
        if not isinstance(value, dict):
            differ(str(type(value)), str(dict), "their Python types differ")
            return
        if set(value) != set(spec.children_names):
            keys = " ".join(repr(k) for k in sorted(set(value) ^ set(spec.children_names), key=str))
            differ(f"{dict} with keys {sorted(value, key=str)}",
                   f"{dict} with keys {list(spec.children_names)}",
                   f"the keys do not match, with the symmetric difference of key sets: {{{keys}}}")
            return
        for name, child in zip(spec.children_names, spec.children):
            _flatten(child, value[name], (*path, f"[{name!r}]"), leaves, differences)
        return
    expected: type = list if kind is TreeKind.LIST else tuple
    if kind is TreeKind.CUSTOM:
        if not isinstance(value, (tuple, list)):
            differ(str(type(value)), f"custom pytree node {spec.custom_name}",
                   "give a custom node as a tuple or list of its children")
            return
    elif type(value) is not expected and not (kind is TreeKind.TUPLE and isinstance(value, tuple)):
        differ(str(type(value)), str(expected), "their Python types differ")
        return
    if len(value) != len(spec.children):
        name = expected.__name__ if kind is not TreeKind.CUSTOM else str(spec.custom_name)
        differ(f"{type(value).__name__} of length {len(value)}",
               f"{name} of length {len(spec.children)}", "the lengths do not match")
        return
    for i, (child, item) in enumerate(zip(spec.children, value)):
        _flatten(child, item, (*path, f"[{i}]"), leaves, differences)


def _args_kwargs_path(path: Sequence[str]) -> str:
    """A path below the ``(args, kwargs)`` root as JAX names it: ``args[0]['w']``, ``kwargs['y']``."""
    if not path:
        return "args"
    return ("args" if path[0] == "[0]" else "kwargs") + "".join(path[1:])


def leaf_paths(in_tree: TreeSpec) -> tuple[str, ...]:
    """The name of each flat input of an ``(args, kwargs)`` tree: ``args[0]``, ``kwargs['y']``.

    >>> leaf = TreeSpec.leaf()
    >>> leaf_paths(TreeSpec.of_tuple(TreeSpec.of_tuple(leaf, TreeSpec.of_dict({"w": leaf})),
    ...                              TreeSpec.of_dict({"y": leaf})))
    ('args[0]', "args[1]['w']", "kwargs['y']")
    """
    return tuple(_args_kwargs_path([f"[{key!r}]" for key in keys]) for keys in in_tree.leaf_keys())


def result_paths(out_tree: TreeSpec) -> tuple[str, ...]:
    """The name of each flat result: ``out`` for a lone array, ``out[0]``, ``out['y']``.

    >>> result_paths(TreeSpec.of_dict({"y": TreeSpec.leaf(), "z": TreeSpec.of_tuple(TreeSpec.leaf())}))
    ("out['y']", "out['z'][0]")
    """
    return tuple("out" + "".join(f"[{key!r}]" for key in keys) for keys in out_tree.leaf_keys())


@dataclass(frozen=True, slots=True)
class CallChecker:
    """What the checks of a call need of one function, parsed once.

    Attributes:
        fun_name: the function's name, for messages.
        specs: the exported spec of each flat input (symbolic dimensions in
            one scope that holds the function's constraints).
        paths: the name of each flat input (``args[0]``).
        is_symbolic: whether some input dimension is symbolic.
    """

    fun_name: str
    specs: tuple[ArraySpec, ...]
    paths: tuple[str, ...]
    is_symbolic: bool
    #: The dimension variables of the (shape, dtype) lists that passed, so that a
    #: steady stream of calls of one shape pays one lookup (bounded: see ``_SEEN``).
    _passed: dict[tuple[Any, ...], dict[str, int]] = field(default_factory=dict, compare=False, repr=False)

    def check(self, leaves: Sequence[Any]) -> dict[str, int]:
        """See :func:`check_call`."""
        if len(leaves) != len(self.specs):
            raise CallError(f"'{self.fun_name}' takes {len(self.specs)} flat arguments, got {len(leaves)}")
        try:
            key = tuple((tuple(leaf.shape), leaf.dtype) for leaf in leaves)
            dims = self._passed.get(key)
        except (AttributeError, TypeError):  # not arrays, or an unhashable dtype: the full check says
            key, dims = None, None
        if dims is None:
            dims = self._check(leaves)
            if key is not None and len(self._passed) < _SEEN:
                self._passed[key] = dims
        return dict(dims)

    def _check(self, leaves: Sequence[Any]) -> dict[str, int]:
        actual = [_spec_of(path, leaf) for path, leaf in zip(self.paths, leaves)]
        check_arguments(self.specs, actual, self.paths)
        if not self.is_symbolic:
            return {}
        solution = solve_call([s.shape for s in self.specs], [a.shape for a in actual], self.paths)
        return {name: value for name, value in solution.values.items() if isinstance(value, int)}


#: How many passing (shape, dtype) lists a checker remembers.
_SEEN = 64


def _spec_of(path: str, leaf: Any) -> ArraySpec:
    shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        raise CallError(f"{path} is a {type(leaf).__name__}, not an array: a runtime takes arrays "
                        "(numpy.asarray(value, dtype) makes one)")
    return ArraySpec(tuple(int(d) for d in shape), str(dtype))


@functools.lru_cache(maxsize=256)
def call_checker(function: Signature) -> CallChecker:
    """The checker of calls to ``function``, its specs parsed once (cached per signature).

    Raises:
        ArtifactError: a dimension or a constraint of the signature does not parse.
    """
    shapes = record_shapes(function.in_avals, function.constraints)
    specs = tuple(ArraySpec(shape, aval.dtype.value) for shape, aval in zip(shapes, function.in_avals))
    return CallChecker(function.name, specs, leaf_paths(function.in_tree), any(s.is_symbolic for s in specs))


def check_call(function: Signature, leaves: Sequence[Any]) -> dict[str, int]:
    """Checks the flat arguments of a call; returns the dimension variables' values.

    Args:
        function: the exported function.
        leaves: one array per flat input (anything with ``shape`` and ``dtype``).

    Returns:
        Each dimension variable's value for this call (empty for a static function).

    Raises:
        RankMismatchError, DtypeMismatchError, ShapeMismatchError: an argument
            differs from the export; the message names its path and both values.
        ShapeAssertionError: the shapes give a dimension variable two values, or
            violate a shape assertion or a user constraint (JAX's message).
        UnsolvableDimensionError: a variable cannot be computed from the shapes.
    """
    return call_checker(function).check(leaves)


def record_shapes(avals: Sequence[AvalRecord], constraints: Sequence[str] = (), *,
                  expr_class: type[DimExpr] = DimExpr) -> list[Shape]:
    """The dimensions of one table's avals as domain values; the symbolic ones share one
    fresh scope that holds ``constraints``.

    Args:
        avals: the avals, with their dimensions as on the wire.
        constraints: the table's symbolic constraints.
        expr_class: the class of the symbolic dimensions built (an adapter's subclass).

    Raises:
        ArtifactError: a dimension or a constraint does not parse.
    """
    scope = constraint_scope(constraints)
    return [parse_dims(aval.shape, scope, expr_class) for aval in avals]


def dimension_variables(function: Signature) -> tuple[str, ...]:
    """The dimension variables of the function's inputs, sorted."""
    shapes = record_shapes(function.in_avals, function.constraints)
    return tuple(sorted({v for shape in shapes for d in shape if isinstance(d, DimExpr) for v in d._get_vars()}))


def unflatten_results(function: Signature, leaves: Sequence[Any]) -> Any:
    """The result pytree of ``function`` from its flat results: tuples, lists, dicts, None.

    A custom node comes back as a tuple of its children.

    Raises:
        ValueError: ``leaves`` are not one per flat result.
    """
    if len(leaves) != function.out_tree.num_leaves:
        raise ValueError(f"'{function.name}' has {function.out_tree.num_leaves} flat results, "
                         f"got {len(leaves)}")
    return build_tree(function.out_tree, leaves)


def build_tree(spec: TreeSpec, leaves: Iterable[Any]) -> Any:
    """The pytree of ``spec`` with ``leaves``, as plain tuples, lists, dicts and None.

    A custom node becomes a tuple of its children.

    >>> build_tree(TreeSpec.of_dict({"y": TreeSpec.leaf(), "z": TreeSpec.of_list(TreeSpec.none())}), [1])
    {'y': 1, 'z': [None]}
    """
    stream = iter(leaves)  # an iterator is its own iter(): the children take their leaves from this one
    kind = spec.kind
    if kind is TreeKind.LEAF:
        return next(stream)
    if kind is TreeKind.NONE:
        return None
    children = [build_tree(child, stream) for child in spec.children]
    if kind is TreeKind.DICT:
        return dict(zip(spec.children_names, children))
    if kind is TreeKind.LIST:
        return children
    return tuple(children)


def with_weights_bound(function: Signature, count: int, *, takes_weights: bool | None = None) -> Signature:
    """The signature of ``function`` as its caller sees it when a runtime holds its first argument.

    A bundle converted for another runtime keeps its weights there (a
    SavedModel's variables, IREE parameters): the caller gives the other
    arguments only. The signature keeps the results; its inputs are the
    caller's (``count`` leading flat inputs, the weights, left out, and
    counted in ``nr_weights``), so that the call checks name the caller's
    arguments (``args[0]`` is the first one after the weights). With
    ``count`` 0 the runtime holds none (the function takes no weights):
    ``function`` itself.

    Args:
        function: the signature, the weights its first positional argument.
        count: the weights' number of leaves.
        takes_weights: whether the first argument is bound whatever ``count`` (a loaded
            bundle's function binds weights of no leaves too); None: when ``count`` is not 0.

    Raises:
        ArtifactError: the function takes no first positional argument with
            ``count`` leaves.
    """
    if not (count > 0 if takes_weights is None else takes_weights):
        return function
    return dataclasses.replace(function, in_tree=caller_tree(function.name, function.in_tree, count),
                               in_avals=function.in_avals[count:], nr_weights=count)


def caller_tree(function: str, in_tree: TreeSpec, count: int) -> TreeSpec:
    """The ``(args, kwargs)`` tree ``in_tree`` of ``function`` without its first positional
    argument, the weights (``count`` arrays).

    Raises:
        ArtifactError: the function takes no first positional argument with ``count`` leaves.
    """
    if in_tree.kind is not TreeKind.TUPLE or len(in_tree.children) != 2:
        raise ArtifactError(f"The input tree {in_tree.kind.value} is not the pytree of (args, kwargs)")
    args, kwargs = in_tree.children
    if args.kind is not TreeKind.TUPLE or not args.children or args.children[0].num_leaves != count:
        raise ArtifactError(f"The function '{function}' does not take the weights "
                            f"({count} arrays) as its first positional argument")
    return TreeSpec.of_tuple(TreeSpec.of_tuple(*args.children[1:]), kwargs)


def check_arguments(expected: Sequence[ArraySpec], actual: Sequence[ArraySpec],
                    paths: Sequence[str]) -> None:
    """Checks rank, dtype and every constant dimension of each flat argument.

    Args:
        expected: the exported input specs.
        actual: the specs of the call's flat arguments, in the same order.
        paths: how each flat argument is named in messages (``"args[0]"``).

    Raises:
        RankMismatchError, DtypeMismatchError, ShapeMismatchError: with the
            argument path and both values.
    """
    for path, exp, got in zip(paths, expected, actual, strict=True):
        if exp.ndim == got.ndim and exp.dtype != got.dtype:  # the rank is said first, then the dtype
            raise DtypeMismatchError(path, exp.dtype, got.dtype)
        check_shape(path, exp.shape, got.shape)
