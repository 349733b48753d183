"""python3 -m tsrun ARGS: the tsrun command (tsrun._cli)."""
import sys

from ._cli import main

sys.exit(main())
