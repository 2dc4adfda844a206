#include "core/text.h"

#include "core/error.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The variables lcmon set itself (lc_env_supply): few, set before any
 * thread starts. */
#define LC_ENV_SUPPLIED_MAX 8
static char lc_env_supplied[LC_ENV_SUPPLIED_MAX][64];

void lc_env_supply(const char *name, const char *value)
{
    for (int i = 0; i < LC_ENV_SUPPLIED_MAX; i++)
        if (!lc_env_supplied[i][0] || strcmp(lc_env_supplied[i], name) == 0) {
            snprintf(lc_env_supplied[i], sizeof lc_env_supplied[i], "%s", name);
            break;
        }
    setenv(name, value, 1);
}

static bool env_supplied(const char *name)
{
    for (int i = 0; i < LC_ENV_SUPPLIED_MAX && lc_env_supplied[i][0]; i++)
        if (strcmp(lc_env_supplied[i], name) == 0)
            return true;
    return false;
}

/* Edits (insert, delete, substitute) from a to b, stopping above limit. */
static size_t edit_distance(const char *a, const char *b, size_t limit)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 62 || m > 62 || (n > m ? n - m : m - n) > limit)
        return limit + 1;
    size_t row[64];
    for (size_t j = 0; j <= m; j++)
        row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diag = row[0], best = row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j];
            size_t v = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < v)
                v = up + 1;
            if (row[j - 1] + 1 < v)
                v = row[j - 1] + 1;
            row[j] = v;
            diag = up;
            if (v < best)
                best = v;
        }
        if (best > limit)
            return limit + 1;
    }
    return row[m];
}

extern char **environ;

bool lc_env_similar(const char *name, char *buf, size_t size)
{
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || (size_t)(eq - *e) >= 64)
            continue;
        char other[64];
        memcpy(other, *e, (size_t)(eq - *e));
        other[eq - *e] = '\0';
        if (strcmp(other, name) != 0 && edit_distance(other, name, 2) <= 2) {
            snprintf(buf, size, "%s", other);
            return true;
        }
    }
    return false;
}

char *lc_expand_env(const char *s, char **bad_name)
{
    return lc_expand_env_noting(s, bad_name, NULL);
}

char *lc_expand_env_noting(const char *s, char **bad_name, char **defaulted)
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
                if (defaulted && !*defaulted && env_supplied(name)) {
                    *defaulted = name;
                    name = NULL;
                }
            } else if (def && def < end) {
                value = def + 2;
                vlen = (size_t)(end - value);
                if (defaulted && !*defaulted) {
                    *defaulted = name;
                    name = NULL;
                }
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

bool lc_parse_bytes(const char *s, uint64_t *out)
{
    if (!s)
        return false;
    while (isspace((unsigned char)*s))
        s++;
    /* Digits with at most one point: no signs, exponents or hex. */
    size_t digits = strspn(s, "0123456789."), points = 0;
    for (size_t i = 0; i < digits; i++)
        points += s[i] == '.';
    if (digits == 0 || points > 1 || digits == points || digits >= 64)
        return false;
    char number[64];
    memcpy(number, s, digits);
    number[digits] = '\0';
    double v = strtod(number, NULL);
    const char *end = s + digits;
    while (isspace((unsigned char)*end))
        end++;
    static const struct {
        const char *unit;
        double scale;
    } units[] = {
        {"", 1},
        {"B", 1},
        {"K", 1e3},
        {"KB", 1e3},
        {"M", 1e6},
        {"MB", 1e6},
        {"G", 1e9},
        {"GB", 1e9},
        {"T", 1e12},
        {"TB", 1e12},
        {"KiB", 1024.0},
        {"MiB", 1048576.0},
        {"GiB", 1073741824.0},
        {"TiB", 1099511627776.0},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].unit) != 0)
            continue;
        double bytes = floor(v * units[i].scale + 0.5);
        if (!(bytes < 9223372036854775808.0))
            return false;
        *out = (uint64_t)bytes;
        return true;
    }
    return false;
}

void lc_format_bytes(char *buf, size_t len, double v)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    size_t u = 0;
    if (!(v >= 0))
        v = 0;
    while (v >= 1000 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1000;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%.0f %s", v, units[u]);
    else
        snprintf(buf, len, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
}

void lc_format_count(char *buf, size_t len, double v)
{
    if (!(v >= 0)) /* negative or NaN */
        v = 0;
    if (v < 10 && v != floor(v))
        snprintf(buf, len, "%.1f", v);
    else if (v < 1e4)
        snprintf(buf, len, "%.0f", v);
    else if (v < 1e6)
        snprintf(buf, len, v < 1e5 ? "%.1fk" : "%.0fk", v / 1e3);
    else if (v < 1e9)
        snprintf(buf, len, v < 1e7 ? "%.2fM" : v < 1e8 ? "%.1fM" : "%.0fM", v / 1e6);
    else if (v < 1e12)
        snprintf(buf, len, v < 1e10 ? "%.2fG" : v < 1e11 ? "%.1fG" : "%.0fG", v / 1e9);
    else
        snprintf(buf, len, "%.2fT", v / 1e12);
}

void lc_format_clock(char *buf, size_t len, double seconds)
{
    if (!(seconds >= 0))
        seconds = 0;
    unsigned long long s = (unsigned long long)seconds;
    unsigned long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
    if (d)
        snprintf(buf, len, "%llud %02lluh", d, h);
    else if (h)
        snprintf(buf, len, "%llu:%02llu:%02llu", h, m, sec);
    else
        snprintf(buf, len, "%llu:%02llu", m, sec);
}

unsigned lc_edit_distance(const char *a, const char *b)
{
    enum { MAX = 63 };
    size_t n = strlen(a), m = strlen(b);
    n = n > MAX ? MAX : n;
    m = m > MAX ? MAX : m;
    unsigned d[MAX + 1][MAX + 1];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (unsigned)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (unsigned)j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            unsigned best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[n][m];
}

const char *lc_closest_word(const char *word, const char *const *words)
{
    size_t len = strlen(word);
    unsigned allowed = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    const char *best = NULL;
    unsigned best_d = allowed + 1;
    for (size_t i = 0; words[i]; i++) {
        unsigned d = lc_edit_distance(word, words[i]);
        if (d < best_d) {
            best_d = d;
            best = words[i];
        }
    }
    return best;
}

bool lc_valid_name(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '-'))
            return false;
    return true;
}

/* ---- characters that may be shown ---- */

size_t lc_utf8_next(const char *s, long *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    *cp = p[0];
    if (p[0] < 0x80)
        return p[0] ? 1 : 0;
    /* The length a lead byte announces, and the least code point of it
     * (anything below is an overlong form). */
    size_t n = p[0] >= 0xc2 && p[0] <= 0xdf   ? 2
               : p[0] >= 0xe0 && p[0] <= 0xef ? 3
               : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                              : 0;
    static const long least[5] = {0, 0, 0x80, 0x800, 0x10000};
    long v = n ? p[0] & (0x7f >> n) : 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) { /* the NUL included: cut short */
            n = 0;
            break;
        }
        v = v << 6 | (p[i] & 0x3f);
    }
    if (!n || v < least[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
        *cp = -1;
        return 1;
    }
    *cp = v;
    return n;
}

bool lc_text_printable(long cp)
{
    return cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp <= 0x9f);
}

size_t lc_text_escape(char *buf, size_t size, const char *s)
{
    size_t used = 0;
    if (size == 0)
        return 0;
    for (;;) {
        long cp;
        size_t n = lc_utf8_next(s, &cp);
        if (n == 0)
            break;
        char esc[4 * 4 + 1];
        const char *put = s;
        size_t len = n;
        if (!lc_text_printable(cp)) {
            len = 0;
            for (size_t i = 0; i < n; i++) {
                unsigned char b = (unsigned char)s[i];
                if (b == '\n' || b == '\r' || b == '\t')
                    len += (size_t)snprintf(esc + len, sizeof esc - len, "\\%c",
                                            b == '\n'   ? 'n'
                                            : b == '\r' ? 'r'
                                                        : 't');
                else
                    len += (size_t)snprintf(esc + len, sizeof esc - len, "\\x%02x", b);
            }
            put = esc;
        }
        if (used + len + 1 > size)
            break;
        memcpy(buf + used, put, len);
        used += len;
        s += n;
    }
    buf[used] = '\0';
    return used;
}

void lc_text_json(const char *s, void (*put)(void *ctx, const char *p, size_t n), void *ctx)
{
    const char *run = s; /* bytes that go as they are, not put yet */
    for (;;) {
        long cp;
        size_t n = lc_utf8_next(s, &cp);
        bool plain = n > 0 && lc_text_printable(cp) && cp != '"' && cp != '\\';
        if (plain) {
            s += n;
            continue;
        }
        if (s > run)
            put(ctx, run, (size_t)(s - run));
        if (n == 0)
            return;
        char esc[16];
        if (cp == '"' || cp == '\\')
            snprintf(esc, sizeof esc, "\\%c", (int)cp);
        else if (cp == '\n' || cp == '\t')
            snprintf(esc, sizeof esc, "\\%c", cp == '\n' ? 'n' : 't');
        else if (cp >= 0)
            snprintf(esc, sizeof esc, "\\u%04lx", cp);
        else
            snprintf(esc, sizeof esc, "\\\\x%02x", (unsigned char)*s);
        put(ctx, esc, strlen(esc));
        s += n;
        run = s;
    }
}
