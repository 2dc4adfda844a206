/*
 * server_client: one client of the monitoring socket (server.c), as bytes:
 * its buffers, taking in what it sent, answering its whole frames a few at
 * a time, writing out what it is owed, and telling a hang-up from a frame
 * cut short. What a message asks for, and when a client must go, is the
 * server's.
 */
#ifndef LC_MONITOR_SERVER_CLIENT_H
#define LC_MONITOR_SERVER_CLIENT_H

#include "monitor/wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "monitor.pb-c.h"

#define LC_SERVER_HARD_OUT_LIMIT (8u << 20) /* close a client that holds more */
#define LC_SERVER_FRAMES_PER_TURN 64
#define LC_SERVER_BUF_KEEP (64u << 10) /* what a drained buffer may keep of its memory */

typedef struct lc_server_client {
    int fd;
    unsigned id;
    char who[24]; /* " (pid N)" for the log, or "" when the peer's pid is unknown */
    lc_wire_buf in, out;
    uint32_t interval_ms;
    unsigned windows; /* the windows it asked for besides 1 s and all time (bit w) */
    uint64_t next_due_ns;
    bool logs;
    uint64_t log_after;
    uint64_t skipped; /* snapshots missed because the client was not reading */
    uint64_t connected_ns;
    bool spoke;                   /* it sent a whole message */
    uint64_t active_ns;           /* when bytes last came from it or went to it */
    uint64_t unfinished_since_ns; /* `in` has held the start of a frame since then (0: no) */
    bool more;                    /* whole frames wait in `in` for the next turn */
    bool closing;                 /* it sent EOF: answer what it asked, flush, then close */
    bool refused; /* turned away: nothing more is read; closed once its refusal is flushed */
} lc_server_client;

/* It asked for snapshots or log lines: it may stay however quiet it is. */
bool lc_server_client_subscribed(const lc_server_client *c);
/* A Subscribe that asks for something (snapshots or log lines), so that
 * a client sending it becomes subscribed. */
bool lc_server_subscribe_asks(const Lcmon__Subscribe *sub);

/* Take what the client sent into its input buffer; false (with *why) to
 * close it. An EOF or a reset marks it closing. */
bool lc_server_client_recv(lc_server_client *c, const char **why);

/* Why a client that hung up counts as misbehaving, or NULL (a plain
 * disconnect): it cut its last frame short. */
const char *lc_server_client_hangup_why(lc_server_client *c);

/* What to do with one message of the client's. */
typedef void (*lc_server_client_handler)(void *ctx, lc_server_client *c,
                                         const Lcmon__ClientMessage *m);
/* Answer up to LC_SERVER_FRAMES_PER_TURN whole frames of the client's input with
 * handle, so that one client's burst never keeps the others waiting;
 * c->more says whether whole frames are left. False (with *why) to close
 * the client. */
bool lc_server_client_serve(lc_server_client *c, lc_server_client_handler handle, void *ctx,
                            const char **why);

/* Write what the client is owed, as far as it takes it; false (with *why:
 * NULL for a plain hang-up) to close it. */
bool lc_server_client_flush(lc_server_client *c, const char **why);

/* Turn the client away: `why` goes to it as ServerMessage.refused (its last
 * message: nothing more it sent is read or answered), and it is closed
 * once that is flushed. */
void lc_server_client_refuse(lc_server_client *c, const char *why);
/* Tell a connection not taken why (ServerMessage.refused), as far as its
 * socket takes it without waiting, then close it. */
void lc_server_refuse_fd(int fd, const char *why);
/* Close its socket (a refused one's unread bytes drained first). */
void lc_server_client_close(lc_server_client *c);

/* The pid of the process at the other end, or 0 if unknown; the same as
 * " (pid N)" for the log ("" if unknown). */
long lc_server_peer_pid(int fd);
void lc_server_peer_who(int fd, char *who, size_t size);

#endif
