import sys

from clevr_poc.mcot.cli import main

sys.exit(main())
