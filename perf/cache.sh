#!/bin/sh
# The decoded cache against the uncached run, the DataLoader and
# libjpeg-turbo's full decode, in rounds; see perf/cache.py (which this
# runs) and perf/README.md.
exec python3 "$(dirname "$0")/cache.py" "$@"
