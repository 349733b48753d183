/*
 * error.h - the error record every tsrun library function can fill.
 *
 * Library code (dsl/, runtime/, the clients) returns 0 on success or a
 * negative code: either -errno where the operating system has a code for
 * the failure (-ENOENT, -ENOMEM, -ETIMEDOUT), or one of the TS_E_* codes
 * below for the domain's own. When the caller passes a non-NULL
 * struct ts_error, the failing function fills it with the code, a location
 * (when the error is in a pipeline source text; zeroed otherwise) and a
 * human-readable message that says what happened and, where it can, what
 * to do. Library code never prints and never exits.
 *
 * This header is public: tsrun.h and tsclient.h include it.
 */
#ifndef TS_ERROR_H
#define TS_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* A span in a source text: 1-based lines and columns, last_* inclusive.
 * Matches bison's location layout so the parser can use it directly. */
struct ts_loc {
	int first_line;
	int first_column;
	int last_line;
	int last_column;
};

/* The domain's codes are below -4095, so they never collide with -errno. */
enum ts_code {
	TS_OK = 0,
	TS_E_SYNTAX = -5001,   /* pipeline text does not parse */
	TS_E_CHECK = -5002,    /* pipeline parses but is not valid */
	TS_E_BUDGET = -5003,   /* plan needs more memory than allowed */
	TS_E_SOURCE = -5004,   /* data source missing, empty or unreadable */
	TS_E_DECODE = -5005,   /* an image could not be decoded */
	TS_E_PROTOCOL = -5006, /* a peer spoke the socket protocol wrongly */
	TS_E_REFUSED = -5007,  /* the producer refused a consumer's hello */
	TS_E_PRODUCER = -5008, /* the producer died or closed the stream */
	TS_E_EOS = -5009,      /* end of stream: every epoch was delivered */
	TS_E_NOMEM = -12,      /* out of memory: -ENOMEM itself, the OS's code
				  (Linux's ENOMEM is 12), named for callers */
	TS_E_ARG = -5011,      /* an invalid argument to an API call */
	TS_E_STATE = -5012,    /* call not valid in the object's state */
	TS_E_PLUGIN = -5013,   /* a plugin operator failed */
	TS_E_NODEV = -5014,    /* a GPU was asked for and none is present */
	TS_E_STOPPED = -5015,  /* the producer was asked to stop (a signal)
				  before the end of the stream */
	TS_E_JOB = -5016,      /* another rank of this trainer's job left
				  before the end of the stream */
	TS_E_DETACHED = -5017, /* the producer detached this trainer: it held
				  the ring past the serve setting
				  stall_timeout */
};

struct ts_error {
	int code;
	struct ts_loc loc;
	char msg[256];
};

#ifdef __cplusplus
}
#endif
#endif
