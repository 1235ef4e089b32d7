"""The pages of JAX's documentation that jaxport's messages cite, at the installed JAX's addresses.

jaxport's messages are ``jax.export``'s, word for word (and a shape
assertion's message is part of the module's bytes), so they cite the pages
where the installed JAX cites them. JAX 0.12 moved them: ``export/export.html``
became ``501/export.html`` and ``export/shape_poly.html``
``501/shape-polymorphism.html``. The domain knows no JAX version: the adapter
that registers jaxport's dimensions with JAX calls :func:`follow_jax` once
(``adapters/jax/lowering/dims.py``); without JAX (a converted model's process, the
browser's ``jaxport.mjs``), the addresses that ``docs.jax.dev/en/latest``
serves today, JAX 0.12's, are cited.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class DocPages:
    """The addresses of the pages, without anchors."""

    export: str = "https://docs.jax.dev/en/latest/501/export.html"
    shape_poly: str = "https://docs.jax.dev/en/latest/501/shape-polymorphism.html"


#: The addresses in use (changed only by :func:`follow_jax`).
PAGES = DocPages()


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


def follow_jax(release: tuple[int, ...]) -> None:
    """Cites the pages where JAX ``release`` cites them, from now on (the JAX of this process)."""
    pages = pages_for(release)
    PAGES.export, PAGES.shape_poly = pages.export, pages.shape_poly
