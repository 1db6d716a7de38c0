"""``python -m arena.cli``: the same as the ``arena`` console script."""

import sys

from arena.cli import main

sys.exit(main())
