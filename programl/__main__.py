"""``python -m programl`` is the ``programl`` command."""

import sys

from programl.cli import main

sys.exit(main())
