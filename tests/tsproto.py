"""The socket protocol's version as runtime/share/proto.h defines it, for
tests that speak the protocol by hand (client-seals.py, jobs-users.py)."""
import os
import re


def proto_version():
    """TS_PROTO_VERSION of runtime/share/proto.h: a hello or welcome must
    carry it."""
    src = os.environ.get("TS_SRCDIR", os.path.join(os.path.dirname(__file__), ".."))
    text = open(os.path.join(src, "runtime", "share", "proto.h")).read()
    return int(re.search(r"#define TS_PROTO_VERSION (\d+)u", text).group(1))
