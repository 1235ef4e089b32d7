"""The rule that turns a pytree node into a plain container, from its children's keys."""

from __future__ import annotations

import pytest

from jaxport.domain.errors import NonStringKeyError
from jaxport.domain.plain_trees import Container, container_for


def test_integer_keys_zero_to_n_in_order_make_a_list() -> None:
    assert container_for(list(range(12)), "x") == (Container.LIST, tuple(str(i) for i in range(12)))


def test_keys_whose_texts_are_sorted_make_a_dict() -> None:
    assert container_for(["bias", "kernel"], "x") == (Container.DICT, ("bias", "kernel"))
    assert container_for([1, 2], "x") == (Container.DICT, ("1", "2"))


def test_keys_that_a_dict_would_reorder_make_an_ordered_dict() -> None:
    assert container_for(["weight", "bias"], "x") == (Container.ORDERED_DICT, ("weight", "bias"))
    # "10" sorts before "2" as text: a dict would put the leaves of 10 first.
    assert container_for([2, 10], "x") == (Container.ORDERED_DICT, ("2", "10"))
    assert container_for([1, 0], "x")[0] is Container.ORDERED_DICT


@pytest.mark.parametrize("keys, culprit", [
    ([(1, 2)], "(1, 2)"), ([True], "True"), ([1.5], "1.5"), ([1, "1"], "'1'"), (["a", "b", "a"], "'a'")])
def test_a_key_that_cannot_be_a_distinct_string_is_refused_naming_it(keys: list[object], culprit: str) -> None:
    with pytest.raises(NonStringKeyError) as refused:
        container_for(keys, "params['t']")
    assert refused.value.where == f"params['t'][{culprit}]"
