/*
 * file: opening what lcmon reads from outside (game files, tar archives,
 * Parquet tables, configurations).
 *
 * Other programs write into a data folder while lcmon runs for weeks: a
 * named pipe (FIFO) or a device named like a game file must not hold a
 * thread in a blocking open (a FIFO's open waits for a writer, for ever),
 * and must not be read as if it were one. So every such open is read-only,
 * close-on-exec and non-blocking, and is checked with fstat before anything
 * is read: what is not a regular file is closed and refused, naming the
 * path and what it is.
 */
#ifndef LC_CORE_FILE_H
#define LC_CORE_FILE_H

#include "core/error.h"

#include <stdio.h>
#include <sys/stat.h>

/* Open path for reading as above. Returns the descriptor (blocking again,
 * which a regular file never does anyway) with *st filled when st is not
 * NULL; or a negative code with err saying "PATH: cannot open: why", or
 * LC_ENOTREG with "PATH: is a named pipe (FIFO), not a regular file". */
int lc_open_regular(const char *path, struct stat *st, lc_error *err);

/* A log to append to (--log-file, --metrics-log), opened without waiting:
 * a named pipe with no reader yet is refused ("start its reader first")
 * instead of holding lcmon in open() with its signals blocked; a directory
 * is refused. NULL with err set on failure. */
FILE *lc_open_append(const char *path, lc_error *err);

/* What a file type is, in words ("a named pipe (FIFO)", "a directory"). */
const char *lc_file_kind(mode_t mode);

#endif
