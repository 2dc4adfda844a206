/*
 * text: small string helpers shared by the layers.
 */
#ifndef LC_CORE_TEXT_H
#define LC_CORE_TEXT_H

#include <stdbool.h>

/* Expand ${NAME} and ${NAME:-default} from the environment, as a shell
 * does: a variable set to the empty string counts as unset. Returns a new
 * string (caller frees), or NULL with *bad_name set to a new string naming
 * the variable when one is unset (or empty) and has no default. */
char *lc_expand_env(const char *s, char **bad_name);
/* Pointer to the part after the last '/'. */
const char *lc_basename(const char *path);
bool lc_has_suffix(const char *s, const char *suffix);

#endif
