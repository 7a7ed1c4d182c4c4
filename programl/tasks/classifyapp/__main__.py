"""``python -m programl.tasks.classifyapp {train,evaluate} ...``: what ``torchrun -m`` runs."""

import sys

from programl.tasks.classifyapp.train import main

sys.exit(main())
