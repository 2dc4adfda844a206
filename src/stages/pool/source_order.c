/*
 * source_order: see source_order.h.
 */
#include "stages/pool/source_order.h"

#include "core/text.h"
#include "format/lc0/chunk_source.h"

#include <string.h>
#include <sys/stat.h>

const lc_setting_value lc_source_order_values[] = {
    {"name", LC_ORDER_NAME},
    {"mtime", LC_ORDER_MTIME},
    {"number", LC_ORDER_NUMBER},
    {0},
};

/* Taken off both ends of a name before its number is read. */
static bool strippable(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' || c == '.';
}

static void find_number(const char *name, lc_order_key *k)
{
    size_t a = 0, b = strlen(name);
    while (a < b && strippable(name[a]))
        a++;
    while (b > a && strippable(name[b - 1]))
        b--;
    k->numbered = a < b;
    for (size_t i = a; i < b; i++)
        if (name[i] < '0' || name[i] > '9')
            k->numbered = false;
    while (k->numbered && a + 1 < b && name[a] == '0')
        a++; /* "000123" is 123; "0" stays "0" */
    k->digits = k->numbered ? name + a : NULL;
    k->n_digits = k->numbered ? b - a : 0;
}

void lc_order_key_make(lc_source_order order, const char *name, const char *path, lc_order_key *k)
{
    memset(k, 0, sizeof *k);
    k->order = order;
    k->name = name;
    k->mtime_ns = -1;
    struct stat st;
    if (order == LC_ORDER_MTIME && path && stat(path, &st) == 0)
        k->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    if (order == LC_ORDER_NUMBER)
        find_number(lc_basename(name), k); /* the name's, not its folder's */
}

int lc_order_compare(const lc_order_key *a, const lc_order_key *b)
{
    if (a->order == LC_ORDER_MTIME && a->mtime_ns >= 0 && b->mtime_ns >= 0 &&
        a->mtime_ns != b->mtime_ns)
        return a->mtime_ns < b->mtime_ns ? -1 : 1;
    if (a->order == LC_ORDER_NUMBER && a->numbered != b->numbered)
        return a->numbered ? 1 : -1;
    if (a->order == LC_ORDER_NUMBER && a->numbered) {
        if (a->n_digits != b->n_digits)
            return a->n_digits < b->n_digits ? -1 : 1;
        int c = memcmp(a->digits, b->digits, a->n_digits);
        if (c)
            return c;
    }
    return lc_source_key_compare(a->name, b->name);
}
