import sys

from clevr_poc.commands.main import main

sys.exit(main())
