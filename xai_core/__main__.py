"""``python -m xai_core`` is the ``xai`` command."""

import sys

from xai_core.cli.main import main

sys.exit(main())
