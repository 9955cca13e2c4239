import sys

from clevr_poc.commands.mcot_command import main

sys.exit(main())
