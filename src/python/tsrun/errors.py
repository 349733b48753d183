"""The exceptions of the tsrun client and the library codes they carry.

The codes are those of include/tsrun/error.h's enum ts_code (tests/
error-codes.py compares every one with the header): -errno where the OS
has a code, TS_E_* for the domain's own. This module is the one place the
Python package names them."""

import errno

E_SOURCE = -5004
E_PROTOCOL = -5006
E_REFUSED = -5007
E_PRODUCER = -5008
E_EOS = -5009
E_NOMEM = -errno.ENOMEM
E_ARG = -5011
E_STATE = -5012
E_NODEV = -5014
E_STOPPED = -5015
E_JOB = -5016
E_DETACHED = -5017
E_TIMEDOUT = -errno.ETIMEDOUT
E_AGAIN = -errno.EAGAIN


class TsrunError(RuntimeError):
    """A libtsclient call failed; ``code`` is the negative return code."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


class ProducerGone(TsrunError):
    """The producer died, stopped or failed before the end of the stream;
    when it failed, the message carries its reason (what and where, as
    the producer reported it)."""


class Timeout(TsrunError, TimeoutError):
    """No batch arrived within the Loader's ``timeout``."""


class JobFailed(TsrunError):
    """Another rank of this trainer's job left before the end of the
    stream (the message names it): the job's shares can no longer be
    equal, so every rank stops rather than wait in a collective; or the
    job waited past the serve setting ``job_timeout`` for ranks that
    never connected (the message names them)."""


class Detached(TsrunError):
    """The producer detached this trainer: it held the ring (read no new
    batch) for longer than the serve setting ``stall_timeout`` while other
    trainers waited on it. The message says how long. The others went
    on; a new Loader joins the stream again, as any late trainer (at the
    next epoch by default)."""


class LibraryNotFound(OSError):
    """libtsclient could not be found or loaded; the message says where it
    looked and how to fix it (build tsrun, or set TSRUN_LIBTSCLIENT)."""


def raise_for(code, err):
    """Raise the exception for libtsclient's return code and ts_error."""
    msg = err.msg.decode("utf-8", "replace")
    if code == E_PRODUCER:
        raise ProducerGone(code, msg)
    if code == E_TIMEDOUT:
        raise Timeout(code, msg)
    if code == E_JOB:
        raise JobFailed(code, msg)
    if code == E_DETACHED:
        raise Detached(code, msg)
    raise TsrunError(code, msg)
