"""``python -m plcore``: the Hydra app (see :mod:`plcore.app`); ``python -m plcore list`` lists components."""

import sys

from plcore.app import main

if __name__ == "__main__":
    sys.exit(main())
