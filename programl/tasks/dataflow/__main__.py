"""``python -m programl.tasks.dataflow {train,evaluate} ...``: what ``torchrun -m`` runs."""

import sys

from programl.tasks.dataflow.train import main

sys.exit(main())
