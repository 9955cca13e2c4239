"""``python -m clevr_poc.baselines.clip``: see :mod:`clevr_poc.commands.clip_command`."""

import sys

from clevr_poc.commands.clip_command import main

sys.exit(main())
