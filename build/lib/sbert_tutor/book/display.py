"""How the chapters' tables show text: whole sentences, run labels and provenance.

pandas cuts every text cell at 50 characters by default ("Two women are embracing while
holding to go pa..."). A chapter calls :func:`show_whole_text` once, in its setup cell, to widen
that to :data:`TEXT_COLUMN_WIDTH` for its own session; importing the book layer changes no
setting. Longer texts (MS MARCO passages, chapter 12's notes on its training data) still end in
"...".
"""

from __future__ import annotations

import pandas as pd

TEXT_COLUMN_WIDTH = 300
"""Characters of a text cell that a chapter's table shows before pandas cuts it with "..."."""


def show_whole_text(width: int = TEXT_COLUMN_WIDTH) -> None:
    """Let this session's tables show text cells of up to ``width`` characters
    (pandas' ``display.max_colwidth``)."""
    pd.set_option("display.max_colwidth", width)
