"""``python -m jaxport``: the ``jaxport`` command."""

import sys

from jaxport.application.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
