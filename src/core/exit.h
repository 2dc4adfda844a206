/*
 * exit: a stop that always stops.
 *
 * A clean stop joins every thread, and a thread can be stuck in a system
 * call nothing wakes (a read from a hung network file system, a device).
 * lc_stop_deadline_start arms a watchdog when a stop begins: if the stop has
 * not ended (lc_stop_deadline_end) within its seconds, or SIGINT or SIGTERM
 * comes again meanwhile, it logs why, removes the files registered with
 * lc_exit_remove_at_exit (the monitoring socket, lock files) when they are still the
 * ones that were registered (same device and inode), and ends the process
 * at once with _exit. A signal within LC_SAME_SIGNAL_S of the stop's start
 * is taken as the one that began it, delivered twice (a terminal's Ctrl-C
 * reaches the whole process group, and a wrapper may forward it too): it
 * is logged and the stop goes on. Descriptors close with the process: the trainer sees
 * the end of its pipe, flocks are released.
 *
 * SIGINT and SIGTERM must be blocked in every thread (main.c does this);
 * the watchdog takes them with sigtimedwait.
 */
#ifndef LC_CORE_EXIT_H
#define LC_CORE_EXIT_H

#include <stdbool.h>

#define LC_STOP_DEADLINE_S 5.0
#define LC_SAME_SIGNAL_S 0.25

/* Remember path (as it is now: its device and inode) for a forced exit;
 * forget it again (the owner removed it itself). At most 16 paths (the
 * monitoring socket, and the lock files of core/lockfile.h: the socket's
 * and each fifo_writer's). */
void lc_exit_remove_at_exit(const char *path);
void lc_exit_forget(const char *path);

/* Arm the watchdog for a stop that must end within `seconds`; disarm it
 * when the stop has ended. One at a time. `asked`: the stop was asked for
 * (a signal, q, the parent gone), so the next SIGINT or SIGTERM is "again"
 * and ends the process at once; otherwise (the data ended, --max-seconds)
 * the first one only asks for the stop already under way (a trainer's
 * close() racing the end of a finite run must not turn status 0 into 130),
 * and a second one ends the process. */
void lc_stop_deadline_start(double seconds, bool asked);
void lc_stop_deadline_end(void);

#endif
