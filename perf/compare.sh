#!/bin/sh
# tsrun against PyTorch's DataLoader (or libjpeg-turbo's decode limit),
# A B A B ...; see perf/compare.py (which this runs) and perf/README.md.
exec python3 "$(dirname "$0")/compare.py" "$@"
