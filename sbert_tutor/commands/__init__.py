"""One module per ``sbert-tutor`` subcommand; each exposes ``register(subparsers)``."""

__all__: list[str] = []
