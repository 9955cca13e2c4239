import sys

from clevr_poc.cli import main

sys.exit(main())
