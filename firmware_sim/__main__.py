"""``python -m firmware_sim``: the ``firmware-sim`` command."""

import sys

from firmware_sim.cli import main

sys.exit(main())
