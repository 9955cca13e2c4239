"""``python -m clevr_poc.perception``: see :mod:`clevr_poc.perception.cli`."""

import sys

from clevr_poc.perception.cli import main

sys.exit(main())
