"""`python -m app [serve|train] ...`"""

import sys

from app.cli import main

sys.exit(main())
