"""One module per ``sbert-tutor`` subcommand; each exposes ``register(subparsers)``."""
