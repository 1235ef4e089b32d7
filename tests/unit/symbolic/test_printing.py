"""Printing matches jax.export character for character.

Every expected string below was produced by ``jax.export.symbolic_shape``
(JAX 0.10.2) or by arithmetic on its dimensions, so that signatures read the
same in jaxport and in JAX.
"""

from __future__ import annotations

import pytest

from jaxport.domain.symbolic import dim_max, dim_min

from .shapes import dims, syms

# spec -> what jax prints for the parsed dimension
PARSED = [
    ("2*b+1", "2*b + 1"),
    ("1+b+b", "2*b + 1"),
    ("b*h", "b*h"),
    ("h*b", "b*h"),
    ("-1+b", "b - 1"),
    ("b-1", "b - 1"),
    ("4-b", "- b + 4"),
    ("-b", "- b"),
    ("-2*b", "- 2*b"),
    ("- 2*b*h - 1", "- 2*b*h - 1"),
    ("b - -1", "b + 1"),
    ("b*-1", "- b"),
    ("floordiv(b, 2)", "floordiv(b, 2)"),
    ("mod(b, 3)", "mod(b, 3)"),
    ("max(b, 4)", "max(b, 4)"),
    ("max(4, b)", "max(4, b)"),
    ("min(b, h)", "min(b, h)"),
    ("min(h, b)", "min(h, b)"),
    ("b*b", "b^2"),
    ("b^2", "b^2"),
    ("b*b*h", "b^2*h"),
    ("3*b*h + 2*b - h + 7", "3*b*h - h + 2*b + 7"),
    ("floordiv(b+1, 2)", "floordiv(b + 1, 2)"),
    ("2*floordiv(b, 2) + mod(b,2)", "mod(b, 2) + 2*floordiv(b, 2)"),
    ("max(b, h) - 1", "max(b, h) - 1"),
    ("floordiv(b*h, 4)", "floordiv(b*h, 4)"),
    ("mod(2*b, 4)", "mod(2*b, 4)"),
    ("b + a", "b + a"),
    ("a*b + b*a", "2*a*b"),
    ("c + b + a", "c + b + a"),
    ("z + a*a + a", "a^2 + z + a"),
    ("max(b,h)*2", "2*max(b, h)"),
    ("max(b,h)+min(b,h)", "min(b, h) + max(b, h)"),
    ("floordiv(b, -2)", "floordiv(b, - 2)"),
    ("floordiv(-b, 2)", "floordiv(- b, 2)"),
    ("mod(b,-3)", "mod(b, - 3)"),
    ("b*floordiv(h,2)", "b*floordiv(h, 2)"),
    ("max(b, 4) * h", "h*max(b, 4)"),
    ("floordiv(b,2) + mod(b,2) + max(b,2) + min(b,2) + b",
     "mod(b, 2) + min(b, 2) + max(b, 2) + floordiv(b, 2) + b"),
    ("min(h,2)*max(h,2)*mod(h,3)*floordiv(h,2)*b", "b*floordiv(h, 2)*max(h, 2)*min(h, 2)*mod(h, 3)"),
    ("a*c + b*b", "a*c + b^2"),
    ("a*a + a*b", "a*b + a^2"),
    ("max(b,h) + b*h", "max(b, h) + b*h"),
    ("a*b*c + a*a*d", "a*b*c + a^2*d"),
    ("a*b*c + b^3", "a*b*c + b^3"),
    ("a*b^3 + a^2*b^2", "a*b^3 + a^2*b^2"),
    ("a^2*c + a*b^2", "a^2*c + a*b^2"),
    ("a*d + b*c", "a*d + b*c"),
    ("max(b,h) + a^5", "max(b, h) + a^5"),
    ("floordiv(b,2) + a*b*c*d*e", "a*b*c*d*e + floordiv(b, 2)"),
    ("floordiv(b,2)*a + floordiv(b,2)^2", "floordiv(b, 2)^2 + a*floordiv(b, 2)"),
    ("max(b,h)*a^3 + floordiv(b,2)*floordiv(b,3)", "a^3*max(b, h) + floordiv(b, 2)*floordiv(b, 3)"),
    ("max(b,h) + floordiv(b+c+d+e,2)", "floordiv(e + d + c + b, 2) + max(b, h)"),
    ("floordiv(b,2) + floordiv(b,3)", "floordiv(b, 3) + floordiv(b, 2)"),
    ("floordiv(b+h,2) + floordiv(b+z,2)", "floordiv(z + b, 2) + floordiv(h + b, 2)"),
    ("floordiv(2*b+h,2) + floordiv(b+2*h,2)", "floordiv(2*h + b, 2) + floordiv(h + 2*b, 2)"),
    ("floordiv(max(b,h),2) + floordiv(b+c+h,2)", "floordiv(max(b, h), 2) + floordiv(h + c + b, 2)"),
    ("floordiv(2,b) + floordiv(b,2)", "floordiv(b, 2) + floordiv(2, b)"),
    ("max(b,2) + max(b,200)", "max(b, 200) + max(b, 2)"),
    ("floordiv(b, 2)*floordiv(b, 2)", "floordiv(b, 2)^2"),
    ("b1 + b + b_2 + bb", "bb + b_2 + b1 + b"),
    ("B + a", "a + B"),
    ("max(b, floordiv(h,2))", "max(b, floordiv(h, 2))"),
    ("mod(floordiv(b,2),3)", "mod(floordiv(b, 2), 3)"),
]


@pytest.mark.parametrize(("spec", "printed"), PARSED)
def test_a_parsed_dimension_prints_as_jax_prints_it(spec: str, printed: str) -> None:
    (d,) = dims(spec)
    assert str(d) == printed
    assert repr(d) == printed


@pytest.mark.parametrize(("spec", "value"), [
    ("0*b + 3", 3), ("b - b + 5", 5), ("max(3,5)", 5), ("min(b,0)", 0), ("min(b,1)", 1),
    ("b^0", 1), ("3^2", 9), ("2*3", 6), ("3 - 5", -2), ("-1", -1), ("1_000", 1000),
])
def test_a_constant_dimension_is_a_plain_int(spec: str, value: int) -> None:
    (d,) = dims(spec)
    assert type(d) is int and d == value


def test_arithmetic_results_print_as_jax_prints_them() -> None:
    b, h = syms("b, h")
    results = {
        "floordiv(b, 2)": b // 2, "b": (2 * b) // 2, "b + 1": (2 * b + 2) // 2,
        "b - 1": (2 * b - 1) // 2, "mod(b, 2)": b % 2, "h": (b * h) // b,
        "floordiv(b, h)": b // h, "floordiv(4, b)": 4 // b, "floordiv(- b, 2)": (-b) // 2,
        "floordiv(b, - 2)": b // -2, "2*b + 3": (4 * b + 6) // 2, "h + 2*b": (6 * b + 3 * h + 1) // 3,
        "floordiv(3*h + 6*b, 2)": (6 * b + 3 * h) // 2, "2*h + 1": (2 * b * h + b) // b,
        "floordiv(2*b*h + 1, b)": (2 * b * h + 1) // b, "floordiv(b + 1, b)": (b + 1) // b,
        "mod(7, b)": 7 % b, "b^2*h": b * h * b, "- b + 3": 3 - b, "- b + 1": -(b - 1),
        "floordiv(floordiv(b, 2), 3)": b // 2 // 3, "mod(b, 2) + 2*floordiv(b, 2)": (b // 2) * 2 + b % 2,
        "mod(mod(b, 2), 2)": b % 2 % 2, "floordiv(mod(b, 3), 3)": (b % 3) // 3,
        "2*floordiv(b, 2)": b // 2 + b // 2, "b^2 - 1": (b + 1) * (b - 1),
        "2*b*h + h^2 + b^2": (b + h) * (b + h), "max(b, 4)": dim_max(b, 4), "max(4, b)": dim_max(4, b),
        "max(b, h)": dim_max(b, h), "max(h, b)": dim_max(h, b), "min(b, h)": dim_min(b, h),
        "max(b - 5, 0)": dim_max(b - 5, 0), "min(b - 5, 0)": dim_min(b - 5, 0), "max(3, b)": b.rmax(3),
        "min(3, b)": b.rmin(3), "b + 1": dim_max(b, b + 1), "2*b": dim_max(2 * b, b),
        "- b - 1": (2 * b + 1) // -2, "b^2 + b": b * (b + 1), "mod(- b, 3)": (-b) % 3,
        "floordiv(3*b, 2*b)": (3 * b) // (2 * b), "b - 1": (b * b - 1) // (b + 1),
        "floordiv(2*b + 3, b + 1)": (2 * b + 3) // (b + 1), "b^2": b**2,
    }
    for printed, value in results.items():
        assert str(value) == printed


def test_constant_results_of_arithmetic_are_ints_as_in_jax() -> None:
    b, h = syms("b, h")
    assert [(2 * b) % 2, (2 * b + 1) % 2, (4 * b + 6) % 4, (2 * b) // b, b // b, b % b] == [0, 1, 2, 2, 1, 0]
    assert [(b * h) % h, b * 0, b - b, (4 * b) // (2 * b), (2 * b + 2) // (b + 1)] == [0, 0, 0, 2, 2]
    assert [(2 * b + 1) % -2, 0 // b, 0 % b, b.min(0), b.min(1), b % 1] == [-1, 0, 0, 0, 1, 0]
    for value in [(2 * b) % 2, b * 0, b - b, b.min(0), (2 * b) // b]:
        assert type(value) is int
    assert divmod(2 * b + 1, 2) == (b, 1)
    assert [str(x) for x in divmod(7, b)] == ["floordiv(7, b)", "mod(7, b)"]


def test_nested_max_simplifies_when_decidable() -> None:
    b, = syms("b")
    assert str(dim_max(dim_max(b, 4), 4)) == "max(b, 4)"
    assert str(dim_max(dim_max(b, 4), 3)) == "max(b, 4)"
    assert str(dim_max(dim_max(b, 4), 5)) == "max(max(b, 4), 5)"
    assert [str(dim_max(b, 1)), str(dim_max(b, 0)), str(dim_max(b, -3)), str(b.max(b - 1))] == ["b"] * 4
