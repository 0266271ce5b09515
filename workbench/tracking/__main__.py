"""``python -m workbench.tracking reap``: the reaper (``tracking.cli``)."""

import sys

from workbench.tracking.cli import main

sys.exit(main())
