"""One module per ``sbert-tutor`` subcommand; each exposes ``register(subparsers)``.

Rule of the folder: a command parses its arguments and calls the library's public functions
(data, encoders, evaluation, training); it holds no method of its own.
"""

__all__: list[str] = []
