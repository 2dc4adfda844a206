#include "core/exit.h"

#include "core/log.h"
#include "core/thread.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PATHS 16

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *path;
    dev_t dev;
    ino_t ino;
} paths[MAX_PATHS];

static pthread_t watchdog;
static bool armed;
static int end_pipe[2] = {-1, -1};
static double deadline_s;
static bool stop_asked; /* a signal now is a second request */

void lc_exit_remove_at_exit(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_PATHS; i++)
        if (!paths[i].path) {
            paths[i].path = strdup(path);
            paths[i].dev = st.st_dev;
            paths[i].ino = st.st_ino;
            break;
        }
    pthread_mutex_unlock(&mu);
}

void lc_exit_forget(const char *path)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_PATHS; i++)
        if (paths[i].path && !strcmp(paths[i].path, path)) {
            free(paths[i].path);
            paths[i].path = NULL;
        }
    pthread_mutex_unlock(&mu);
}

/* Newest first: a socket before the lock file that guarded its making. */
static void remove_paths(void)
{
    pthread_mutex_lock(&mu);
    for (int i = MAX_PATHS - 1; i >= 0; i--) {
        struct stat st;
        if (paths[i].path && lstat(paths[i].path, &st) == 0 && st.st_dev == paths[i].dev &&
            st.st_ino == paths[i].ino)
            unlink(paths[i].path);
    }
    pthread_mutex_unlock(&mu);
}

static void *watch(void *arg)
{
    (void)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double left = deadline_s - ((double)(now.tv_sec - t0.tv_sec) +
                                    (double)(now.tv_nsec - t0.tv_nsec) * 1e-9);
        if (left <= 0) {
            LC_ERROR("the stop did not end within %g s: exiting without waiting for it (a "
                     "thread stuck in a system call, or a stop_grace too short for the reader)",
                     deadline_s);
            remove_paths();
            _exit(1);
        }
        /* The stop's end closes the pipe's write side: poll it with the
         * signals, in slices. */
        double slice = left < 0.1 ? left : 0.1;
        struct timespec ts = {(time_t)slice, (long)((slice - (double)(time_t)slice) * 1e9)};
        int sig = sigtimedwait(&set, NULL, &ts);
        clock_gettime(CLOCK_MONOTONIC, &now);
        double since = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9;
        if (sig > 0 && !stop_asked) {
            /* A stop lcmon began by itself: the first signal asks for it. */
            LC_INFO("%s while stopping: the stop goes on (once more to exit at once)",
                    strsignal(sig));
            stop_asked = true;
        } else if (sig > 0 && since < LC_SAME_SIGNAL_S) {
            /* One Ctrl-C delivered twice (by the terminal to the process
             * group and by a wrapper that forwards it): the same request. */
            LC_INFO("%s again within %g s of the stop: taken as the same one (send it again to "
                    "exit at once)",
                    strsignal(sig), LC_SAME_SIGNAL_S);
        } else if (sig > 0) {
            LC_WARN("%s again while stopping: exiting at once", strsignal(sig));
            remove_paths();
            _exit(128 + sig);
        }
        char c;
        if (read(end_pipe[0], &c, 1) == 0) /* closed: the stop ended */
            return NULL;
    }
}

void lc_stop_deadline_start(double seconds, bool asked)
{
    if (armed)
        return;
    stop_asked = asked;
    if (pipe(end_pipe) != 0)
        return; /* no watchdog; the stop still runs */
    /* Non-blocking read side: the watchdog only asks whether it closed. */
    int fl = fcntl(end_pipe[0], F_GETFL);
    fcntl(end_pipe[0], F_SETFL, fl | O_NONBLOCK);
    /* Tests under sanitizers scale it, or shorten it to see it work. */
    const char *env = getenv("LCMON_STOP_DEADLINE");
    double v = env ? strtod(env, NULL) : 0;
    deadline_s = v > 0 ? v : seconds;
    if (pthread_create(&watchdog, NULL, watch, NULL) != 0) {
        close(end_pipe[0]);
        close(end_pipe[1]);
        return;
    }
    armed = true;
}

void lc_stop_deadline_end(void)
{
    if (!armed)
        return;
    close(end_pipe[1]);
    pthread_join(watchdog, NULL);
    close(end_pipe[0]);
    armed = false;
}
