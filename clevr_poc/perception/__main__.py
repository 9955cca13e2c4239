"""``python -m clevr_poc.perception``: see :mod:`clevr_poc.commands.perception`."""

import sys

from clevr_poc.commands.perception import main

sys.exit(main())
