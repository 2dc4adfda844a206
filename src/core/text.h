/*
 * text: small string helpers shared by the layers.
 */
#ifndef LC_CORE_TEXT_H
#define LC_CORE_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Expand ${NAME} and ${NAME:-default} from the environment, as a shell
 * does: a variable set to the empty string counts as unset. Returns a new
 * string (caller frees), or NULL with *bad_name set to a new string naming
 * the variable when one is unset (or empty) and has no default. */
char *lc_expand_env(const char *s, char **bad_name);
/* As lc_expand_env; also sets *defaulted (when not NULL, and not already
 * set) to a new string naming the first variable whose default was taken,
 * or that lcmon itself supplied (lc_env_supply). */
char *lc_expand_env_noting(const char *s, char **bad_name, char **defaulted);
/* Set an unset variable to lcmon's own default (for the config's ${NAME}),
 * remembering that the user did not choose it. */
void lc_env_supply(const char *name, const char *value);
/* A set environment variable whose name is within two edits of name (a
 * misspelling of it, such as LCMON_DAT for LCMON_DATA) into buf, or false. */
bool lc_env_similar(const char *name, char *buf, size_t size);
/* The character at s: its length in bytes (0 at the terminating NUL) and
 * its code point in *cp, or -1 for a byte that does not start valid UTF-8
 * (a stray continuation byte, an overlong form, a surrogate, a code point
 * beyond U+10FFFF, a sequence cut short), which counts as one byte. */
size_t lc_utf8_next(const char *s, long *cp);
/* A code point that may go as it is to a terminal, a log line or a JSON
 * string: not a control character (C0, DEL, C1) nor an invalid byte (-1).
 * The screen draws the others as '?'; lc_text_escape writes them out. */
bool lc_text_printable(long cp);
/* s into buf (of size bytes, always terminated) with every character that
 * is not printable escaped: \n, \r, \t as such, any other as \xHH a byte.
 * So a file name cannot forge a log line or retitle a terminal. Cut at a
 * whole character; returns the length written. */
size_t lc_text_escape(char *buf, size_t size, const char *s);
/* s as the inside of a JSON string (no quotes), handed to put a run at a
 * time: '"' and '\\' escaped, control characters as \uXXXX (\n, \t as
 * such), and each byte of invalid UTF-8 as the text \xHH (a backslash,
 * x and the byte in hex, as lc_text_escape writes it), so that the result
 * always decodes. */
void lc_text_json(const char *s, void (*put)(void *ctx, const char *p, size_t n), void *ctx);

/* Pointer to the part after the last '/'. */
const char *lc_basename(const char *path);
bool lc_has_suffix(const char *s, const char *suffix);
/* A name of the configuration (a stage's, an output's): 1 to max letters,
 * digits, '_' or '-'. */
bool lc_valid_name(const char *s, size_t max);

/* The edit distance (insertions, deletions, substitutions, and swaps of two
 * neighbours) between a and b, case-insensitive; for "did you mean". Words
 * longer than 63 characters are compared by their first 63. */
unsigned lc_edit_distance(const char *a, const char *b);
/* The word of `words` (NULL-terminated) closest to `word`, when close
 * enough to be a likely misspelling (at most 1 edit for words up to 4
 * characters, 2 up to 8, 3 beyond); NULL otherwise. */
const char *lc_closest_word(const char *word, const char *const *words);

/* A byte size as people write it: a number (decimals allowed) and an
 * optional unit, B, k/K, M, G or T (powers of 1000, with or without a
 * trailing B) or KiB, MiB, GiB, TiB (powers of 1024); spaces between are
 * allowed. false for anything else, or a size of 2^63 bytes or more. */
bool lc_parse_bytes(const char *s, uint64_t *out);
/* Bytes in decimal units ("512 B", "1.50 GB", "24.7 MB"). */
void lc_format_bytes(char *buf, size_t len, double bytes);
/* A count or a rate in at most 6 characters ("7", "2.5", "9999", "38.5k",
 * "123k", "1.50M"); negative or NaN: "0". */
void lc_format_count(char *buf, size_t len, double v);
/* A duration as a clock: "1:23", "2:03:04", "3d 04h". */
void lc_format_clock(char *buf, size_t len, double seconds);

#endif
