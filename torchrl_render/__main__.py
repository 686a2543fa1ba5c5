"""``python -m torchrl_render``."""

import sys

from .cli import main

sys.exit(main())
