"""``python -m plcore``: the Hydra app (see :mod:`plcore.run.app`); ``python -m plcore list`` lists components."""

import sys

from plcore.run.app import main

if __name__ == "__main__":
    sys.exit(main())
