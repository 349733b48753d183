#!/bin/sh
# N trainers on one tsrun against N independent PyTorch DataLoaders on the
# same cores; see perf/sharing.py (which this runs) and perf/README.md.
exec python3 "$(dirname "$0")/sharing.py" "$@"
