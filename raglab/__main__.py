"""`python -m raglab` runs the same command line as `raglab`."""

import sys

from raglab.cli import main

sys.exit(main())
