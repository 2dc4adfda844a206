#include "core/text.h"

#include "core/error.h"

#include <stdlib.h>
#include <string.h>

char *lc_expand_env(const char *s, char **bad_name)
{
    size_t cap = strlen(s) + 64, len = 0;
    char *out = lc_xmalloc(cap);
    for (const char *p = s; *p;) {
        const char *value = NULL;
        size_t vlen = 0;
        if (p[0] == '$' && p[1] == '{' && strchr(p, '}')) {
            const char *end = strchr(p, '}');
            const char *def = strstr(p, ":-");
            size_t name_len = (def && def < end) ? (size_t)(def - p - 2) : (size_t)(end - p - 2);
            char *name = lc_xstrndup(p + 2, name_len);
            value = getenv(name);
            if (value && *value) {
                vlen = strlen(value);
            } else if (def && def < end) {
                value = def + 2;
                vlen = (size_t)(end - value);
            } else {
                free(out);
                if (bad_name)
                    *bad_name = name;
                else
                    free(name);
                return NULL;
            }
            free(name);
            p = end + 1;
        } else {
            value = p;
            vlen = 1;
            p++;
        }
        if (len + vlen + 1 > cap) {
            cap = (len + vlen + 1) * 2;
            out = lc_xrealloc(out, cap);
        }
        memcpy(out + len, value, vlen);
        len += vlen;
    }
    out[len] = '\0';
    return out;
}

const char *lc_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

bool lc_has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}
