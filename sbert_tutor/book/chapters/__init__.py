"""One module per chapter of the book, named like the chapter's notebook: its experiments and its
figures (see :mod:`sbert_tutor.book` for the map). Each imports the ground floor of the book
layer and the library, never another chapter module."""

__all__: list[str] = []
