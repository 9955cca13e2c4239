"""``python -m clevr_poc.baselines.clip``: see :mod:`clevr_poc.baselines.clip.cli`."""

import sys

from clevr_poc.baselines.clip.cli import main

sys.exit(main())
