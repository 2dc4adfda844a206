/*
 * ctl: the `lcmon ctl SOCKET ...` command for scripts and training loops.
 */
#ifndef LC_MONITOR_CTL_H
#define LC_MONITOR_CTL_H

/* argv[0] is the socket path, argv[1] the command. Returns the exit status. */
int lc_ctl_main(int argc, char **argv);

#endif
