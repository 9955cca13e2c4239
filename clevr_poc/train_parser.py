"""``python -m clevr_poc.train_parser``: the entry point of :mod:`clevr_poc.commands.train_parser_command`."""

import sys

from clevr_poc.commands.train_parser_command import build_parser, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
