"""Let `python -m laneway.sim --port P` run the sim without the project CLI."""

import sys

from laneway.sim._server import main

sys.exit(main())
