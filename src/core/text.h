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

#endif
