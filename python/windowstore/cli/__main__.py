"""``python -m windowstore.cli``: the ``windowstore`` command."""

import sys

from windowstore.cli import main

sys.exit(main())
