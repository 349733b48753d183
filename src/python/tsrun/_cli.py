"""The `tsrun` command of a pip install: an entry point that runs the tsrun
binary the package carries (tsrun/bin/tsrun, the one meson builds), or,
imported from a source tree, the newest build*/src/tsrun; `python3 -m
tsrun` is the same. The binary is exec'd: its exit status, signals and
terminal are the command's own."""

import os
import sys

from ._lib import find_program


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    exe = find_program("tsrun")
    if exe is None:
        sys.stderr.write("tsrun: this tsrun package carries no tsrun binary (bin/tsrun "
                         "in %s) and is not in a built source tree; reinstall it with "
                         "pip install --no-build-isolation . or build one with meson "
                         "setup build && meson compile -C build\n"
                         % os.path.dirname(os.path.abspath(__file__)))
        return 127
    # The plugin host is found next to tsrun (runtime/engine/plugin.c).
    os.execv(exe, ["tsrun"] + argv)
    return 127  # not reached
