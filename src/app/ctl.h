/*
 * ctl: the `lcmon ctl SOCKET ...` command for scripts and training loops.
 */
#ifndef LC_APP_CTL_H
#define LC_APP_CTL_H

/* argv[0] is "ctl", argv[1] the socket path, argv[2] the command. Returns
 * the exit status. */
int lc_ctl_main(int argc, char **argv);

#endif
