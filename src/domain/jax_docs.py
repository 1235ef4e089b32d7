"""The pages of JAX's documentation that jaxport's messages cite, at the installed JAX's addresses.

jaxport's messages are ``jax.export``'s, word for word (and a shape
assertion's message is part of the module's bytes), so they cite the pages
where the installed JAX cites them. JAX 0.12 moved them: ``export/export.html``
became ``501/export.html`` and ``export/shape_poly.html``
``501/shape-polymorphism.html``. The domain knows no JAX version: a message
cites the pages it is handed (a symbolic dimension's class names them,
``DimExpr.docs``); the JAX adapter chooses them from the installed JAX with
:func:`pages_for` (its ``JaxDim.docs``) and passes them where it builds a
message; without JAX (a converted model's process, the browser's
``jaxport.mjs``), the addresses that ``docs.jax.dev/en/latest`` serves today,
JAX 0.12's (``DocPages()``), are cited.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DocPages:
    """The addresses of the pages, without anchors (by default, where ``docs.jax.dev/en/latest`` has them)."""

    export: str = "https://docs.jax.dev/en/latest/501/export.html"
    shape_poly: str = "https://docs.jax.dev/en/latest/501/shape-polymorphism.html"


def pages_for(release: tuple[int, ...]) -> DocPages:
    """Where JAX ``release`` (``(0, 12, 0)``) cites the pages.

    >>> pages_for((0, 12, 0)).shape_poly
    'https://docs.jax.dev/en/latest/501/shape-polymorphism.html'
    >>> pages_for((0, 10, 2)).shape_poly
    'https://docs.jax.dev/en/latest/export/shape_poly.html'
    """
    moved = release >= (0, 12)
    base = "https://docs.jax.dev/en/latest/"
    return DocPages(base + ("501/export.html" if moved else "export/export.html"),
                    base + ("501/shape-polymorphism.html" if moved else "export/shape_poly.html"))
