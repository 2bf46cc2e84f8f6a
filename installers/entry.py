"""The bundle's one program: ``labferry`` (the CLI; ``labferry gui`` opens the window)."""

import sys

from app.cli import main

if __name__ == "__main__":
    sys.exit(main())
