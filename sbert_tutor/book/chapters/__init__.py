"""One module per chapter of the book, named like the chapter's notebook: its sizes under each
profile, its experiments and its figures (see :mod:`sbert_tutor.book` for the map). Each imports
the ground floor of the book layer and the library, never another chapter module.
:func:`every_chapter` imports them all, for the tables that span the book."""

from __future__ import annotations

import importlib
import pkgutil

from sbert_tutor.book.sizes import ChapterSizes, registered_sizes

__all__ = ["every_chapter"]


def every_chapter() -> dict[type[ChapterSizes], str]:
    """Every chapter's sizes class -> its chapter (notebook stem), in book order: imports each
    chapter module (each registers its sizes with :func:`~sbert_tutor.book.sizes.register_sizes`)."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return registered_sizes()
