"""One module per chapter of the book, named like the chapter's notebook: its sizes under each
profile, its experiments and its figures (see :mod:`sbert_tutor.book`). Each imports the ground
floor and the library, never another chapter module."""

from __future__ import annotations

import importlib
import pkgutil

from sbert_tutor.book.sizes import ChapterSizes, registered_sizes

__all__ = ["every_chapter"]


def every_chapter() -> dict[type[ChapterSizes], str]:
    """Every chapter's sizes class -> its chapter (notebook stem), in book order, after importing
    each chapter module (which registers its sizes)."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return registered_sizes()
