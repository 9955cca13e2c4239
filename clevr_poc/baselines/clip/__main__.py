"""``python -m clevr_poc.baselines.clip``: see :mod:`clevr_poc.commands.clip`."""

import sys

from clevr_poc.commands.clip import main

sys.exit(main())
