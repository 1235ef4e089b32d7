"""The pages of JAX's documentation that jaxport's messages cite, at the installed JAX's addresses.

jaxport's messages are ``jax.export``'s, word for word (and a shape
assertion's message is part of the module's bytes), so they cite the pages
where the installed JAX cites them. JAX 0.12 moved them: ``export/export.html``
became ``501/export.html`` and ``export/shape_poly.html``
``501/shape-polymorphism.html``. The domain knows no JAX version: the adapter
that registers jaxport's dimensions with JAX calls :func:`follow_jax` once
(``adapters/jax_dims.py``). Without JAX (a converted directory's calls), the
pages of the JAX that exported the directory's source are cited
(:func:`follow_exporter`), else the older addresses.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class DocPages:
    """The addresses of the pages, without anchors."""

    export: str = "https://docs.jax.dev/en/latest/export/export.html"
    shape_poly: str = "https://docs.jax.dev/en/latest/export/shape_poly.html"


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
    global _FOLLOWS_JAX
    _FOLLOWS_JAX = True
    _cite(pages_for(release))


def follow_exporter(version: str) -> None:
    """Cites the pages where JAX ``version`` (``"0.12.0.1"``) cites them, unless this process runs JAX.

    For a converted directory's calls, which run without JAX: their messages
    are those of the JAX that exported the source. With JAX in the process,
    its own pages stay (:func:`follow_jax`).
    """
    if not _FOLLOWS_JAX:
        _cite(pages_for(release_of(version)))


def release_of(version: str) -> tuple[int, ...]:
    """The leading numbers of a version.

    >>> release_of("0.12.0.1"), release_of("0.11.2rc1")
    ((0, 12, 0), (0, 11))
    """
    release: list[int] = []
    for part in version.split(".")[:3]:
        if not part.isdigit():
            break
        release.append(int(part))
    return tuple(release)


#: Whether :func:`follow_jax` set the pages (JAX runs in this process).
_FOLLOWS_JAX = False


def _cite(pages: DocPages) -> None:
    PAGES.export, PAGES.shape_poly = pages.export, pages.shape_poly
