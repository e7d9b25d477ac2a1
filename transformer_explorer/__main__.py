"""`python -m transformer_explorer [serve|train|heads|export-site] ...`, the same as `transformer-explorer`."""

import sys

from transformer_explorer.cli import main

sys.exit(main())
