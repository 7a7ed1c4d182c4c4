"""``python -m programl.tasks.devmap {train,evaluate} ...``: what ``torchrun -m`` runs."""

import sys

from programl.tasks.devmap.train import main

sys.exit(main())
