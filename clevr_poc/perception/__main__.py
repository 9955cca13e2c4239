"""``python -m clevr_poc.perception``: see :mod:`clevr_poc.commands.perception_command`."""

import sys

from clevr_poc.commands.perception_command import main

sys.exit(main())
