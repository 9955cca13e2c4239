import sys

from clevr_poc.commands.mcot import main

sys.exit(main())
