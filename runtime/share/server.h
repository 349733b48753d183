/*
 * server.h - the handoff server: a Unix socket on which consumers say
 * hello and get, by SCM_RIGHTS, a read-only descriptor of the ring and a
 * control page of their own (see tensorsocket(7) for the wire format).
 *
 * The server runs its own thread: a poll loop over the listening socket and
 * every connection. It checks the peer's uid (SO_PEERCRED), validates every
 * byte it reads (a client speaking garbage is disconnected, the others are
 * served on), and detaches a consumer the moment its socket hangs up, so a
 * dead consumer stops holding the ring back.
 *
 * Functions return 0 or a negative code and fill err when non-NULL.
 */
#ifndef TS_SERVER_H
#define TS_SERVER_H

#include "error.h"
#include "proto.h"
#include "ring.h"

struct ts_server;

/*
 * Serve ring on a Unix socket at socket_path. group NULL: the socket is
 * mode 0600 and only this uid may connect; otherwise mode 0660, owned by
 * that group, and its members may connect. A stale socket file (nobody
 * listening) is replaced; a live one is refused with an error naming it;
 * any other file at the path is left alone and refused.
 * Starts the server thread. The ring must outlive the server.
 * *out is written on success only. Returns 0, TS_E_ARG, TS_E_STATE (live
 * socket) or -errno.
 */
int ts_server_create(struct ts_ring *ring, const char *socket_path,
		     const char *group, struct ts_server **out,
		     struct ts_error *err);

/* As ts_server_create, and every welcome also carries dev, the device
 * ring this producer fills (device(cuda) pipelines); NULL: none. */
int ts_server_create_device(struct ts_ring *ring, const char *socket_path,
			    const char *group, const struct ts_proto_device *dev,
			    struct ts_server **out, struct ts_error *err);

/* Make the private folder of a default socket path (its parent: see
 * struct ts_plan's socket_private) if it is not there, mode 0700 (0710
 * with group: the group may reach the socket, not list or write), and
 * check it: a real folder (not a symlink) of this user that no one else
 * can write. 0, or TS_E_STATE naming the folder and what to do. */
int ts_server_private_dir(const char *socket_path, const char *group,
			  struct ts_error *err);

/* Stop the thread, hang up on every consumer (detaching them), close and
 * unlink the socket. NULL is a no-op. */
void ts_server_destroy(struct ts_server *s);

/* In a child forked from the serving process (a DataLoader worker of
 * tsrun.serve), close the child's copies of the listening socket and of
 * every connection, so that the server's death still hangs up on its
 * trainers and refuses new ones at once, whatever the child does. Frees
 * nothing and takes no lock (the child has none of the threads). */
void ts_server_forget_in_child(struct ts_server *s);

/* How long a trainer may hold the ring without releasing while another
 * waits on it, by default (the serve setting stall_timeout), and at most;
 * 0 waits forever. */
#define TS_SERVER_STALL_TIMEOUT_S 120
#define TS_SERVER_STALL_TIMEOUT_MAX_S 86400

/*
 * Limits (the serve settings stall_timeout and consumers): a trainer
 * whose release position has not moved for stall_timeout_s seconds while
 * the ring is full up to it and another trainer waits on it is detached
 * (its reader returns TS_E_DETACHED, the server hangs up and queues a
 * note); 0 never detaches. At most max_consumers (1..TS_RING_MAX_CONSUMERS)
 * trainers are served at once; more are refused. Defaults:
 * TS_SERVER_STALL_TIMEOUT_S, TS_RING_MAX_CONSUMERS. Thread-safe; applies
 * from the server's next poll. Returns 0 or TS_E_ARG.
 */
int ts_server_set_limits(struct ts_server *s, double stall_timeout_s,
			 unsigned max_consumers, struct ts_error *err);

/* The pipeline ends in device(cuda) but this server serves the host ring
 * (no device ring was given to ts_server_create_device): every welcome
 * then carries fb (what was promised, and why), so that no trainer takes
 * the uint8 NHWC samples for the finished ones. Call before the first
 * trainer connects; copies fb. 0, or TS_E_ARG with a device ring served. */
int ts_server_set_fallback(struct ts_server *s, const struct ts_proto_fallback *fb,
			   struct ts_error *err);

/*
 * The serve setting job_timeout: a job whose ranks have not all connected
 * job_timeout_s seconds after its first waiting rank came ends; its
 * connected ranks' readers return TS_E_JOB naming the ranks that never
 * came and the setting, and the server queues a note. The waiting ranks
 * hold nobody back meanwhile. 0 waits forever; below 0 (the default)
 * follows stall_timeout. Thread-safe; applies from the server's next
 * poll. Returns 0 or TS_E_ARG (over TS_SERVER_STALL_TIMEOUT_MAX_S).
 */
int ts_server_set_job_timeout(struct ts_server *s, double job_timeout_s,
			      struct ts_error *err);

/* The next line for the producer's log (a trainer detached for stalling),
 * into buf (n bytes, NUL-terminated): true, or false when there is none.
 * Thread-safe. */
bool ts_server_take_note(struct ts_server *s, char *buf, size_t n);

/* Remove the socket file (if it is still ours) without stopping anything:
 * for a process about to _exit. */
void ts_server_unlink(struct ts_server *s);

/* The socket path being served (owned by the server). */
const char *ts_server_path(const struct ts_server *s);

/* Consumers currently connected (welcomed and not hung up). Thread-safe. */
unsigned ts_server_consumers(struct ts_server *s);

/* A status snapshot (head, each consumer's pid, batch, release position,
 * lag and rate); the same as ts_ring_stat on the served ring. Thread-safe. */
void ts_server_stat(struct ts_server *s, struct ts_ring_stat *out);

#endif
