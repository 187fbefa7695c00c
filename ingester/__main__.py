"""`python -m ingester` is `gmail-stats`."""

import sys

from ingester.cli import main

sys.exit(main())
