"""Sub-commands of ``python -m clevr_poc`` (one module each; see :mod:`clevr_poc.commands.main`)."""
