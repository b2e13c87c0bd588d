"""``python -m adk_otel.cli``: the ``adk-otel`` command."""

import sys

from .main import main

sys.exit(main())
