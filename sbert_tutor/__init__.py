"""sbert_tutor: Sentence-BERT from first principles.

The library behind the *sbert-tutor* book. Every chapter imports it; it is also usable on its own:

>>> from sbert_tutor import SentenceEncoder
>>> enc = SentenceEncoder.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")  # doctest: +SKIP
>>> enc.encode(["A man is playing a guitar."]).shape  # doctest: +SKIP
(1, 384)

Settings (environment variables) are documented in :mod:`sbert_tutor.settings`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["SentenceEncoder", "__version__"]

if TYPE_CHECKING:  # pragma: no cover
    from sbert_tutor.encoder import SentenceEncoder


def __getattr__(name: str) -> Any:
    # Lazy import keeps `import sbert_tutor` (and the CLI's --help) fast: torch and transformers
    # load only when the encoder is first used.
    if name == "SentenceEncoder":
        from sbert_tutor.encoder import SentenceEncoder

        return SentenceEncoder
    raise AttributeError(f"module 'sbert_tutor' has no attribute {name!r}")
