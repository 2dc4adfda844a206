/*
 * settings_read: see settings_read.h. A value is parsed the way its row's
 * type says (a default is parsed the same way, from its text), then held
 * against the row's range; a value that is refused leaves the default in
 * place, so that every other setting is still read and checked.
 */
#include "pipeline/settings_read.h"

#include "core/error.h"
#include "core/log.h"
#include "core/text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- where things are ---- */

void lc_reading_key(lc_reading *r, const char *path, int line, int col)
{
    lc_config_marks *m = r->marks;
    if (m->n_keys == m->cap_keys) {
        m->cap_keys = m->cap_keys ? 2 * m->cap_keys : 64;
        m->keys = lc_xrealloc(m->keys, m->cap_keys * sizeof *m->keys);
    }
    lc_config_key *k = &m->keys[m->n_keys++];
    snprintf(k->path, sizeof k->path, "%s", path);
    k->line = line;
    k->col = col;
}

void lc_reading_problem(lc_reading *r, int line, int col, const char *path, const char *fmt, ...)
{
    lc_problems *ps = &r->marks->problems;
    ps->stage = r->stage;
    va_list ap;
    va_start(ap, fmt);
    lc_problem_vadd_at(ps, line, col, path, fmt, ap);
    va_end(ap);
}

void lc_reading_stage_unknown_key(lc_reading *r, int stage)
{
    lc_config_marks *m = r->marks;
    if (stage < 0)
        return;
    if ((size_t)stage >= m->n_stages) {
        m->stage_unknown_key =
            lc_xrealloc(m->stage_unknown_key, (size_t)(stage + 1) * sizeof *m->stage_unknown_key);
        for (size_t i = m->n_stages; i <= (size_t)stage; i++)
            m->stage_unknown_key[i] = false;
        m->n_stages = (size_t)stage + 1;
    }
    m->stage_unknown_key[stage] = true;
}

/* ---- scalars ---- */

/* The words read as true and as false. */
static int bool_word(const char *v)
{
    static const char *const yes[] = {"true", "yes", "on", "1", "enable"};
    static const char *const no[] = {"false", "no", "off", "0", "disable"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return 1;
        if (strcasecmp(v, no[i]) == 0)
            return 0;
    }
    return -1;
}

/* A whole number's low `size` bytes (a signed one's two's complement). */
static void store_whole(void *at, size_t size, uint64_t v)
{
    switch (size) {
    case 1:
        *(uint8_t *)at = (uint8_t)v;
        break;
    case 2:
        *(uint16_t *)at = (uint16_t)v;
        break;
    case 4:
        *(uint32_t *)at = (uint32_t)v;
        break;
    default:
        *(uint64_t *)at = v;
        break;
    }
}

/* "a, b or c": an enum's names. */
static void enum_names(const lc_setting_value *values, char *list, size_t size)
{
    size_t used = 0, n = 0;
    while (values[n].name)
        n++;
    list[0] = '\0';
    for (size_t i = 0; i < n && used < size; i++) {
        int k = snprintf(list + used, size - used, "%s%s",
                         i == 0       ? ""
                         : i + 1 == n ? " or "
                                      : ", ",
                         values[i].name);
        if (k > 0)
            used += (size_t)k;
    }
}

/* A scalar's value as the row's type: 0 and the value at `at`, or -1 and
 * the problem in why ("'x' is not a whole number"). Numbers come back in
 * *num too, for the range. */
static int parse_scalar(lc_setting_type type, const lc_setting *row, size_t size, const char *v,
                        void *at, double *num, char *why, size_t wsize)
{
    char *rest = NULL;
    errno = 0;
    switch (type) {
    case LC_SETTING_BOOL: {
        int b = bool_word(v);
        if (b < 0)
            return snprintf(why, wsize, "'%s' is not true or false", v), -1;
        *(bool *)at = b;
        return 0;
    }
    case LC_SETTING_WHOLE: {
        if (v[0] == '-' && v[1] >= '0' && v[1] <= '9')
            return snprintf(why, wsize, "%s is negative (give a whole number, 0 or more)", v), -1;
        unsigned long long x = strtoull(v, &rest, 0);
        if (!v[0] || rest == v || *rest)
            return snprintf(why, wsize, "'%s' is not a whole number", v), -1;
        if (errno == ERANGE || (size < 8 && x >> (8 * size)))
            return snprintf(why, wsize, "%s is too large", v), -1;
        store_whole(at, size, x);
        *num = (double)x;
        return 0;
    }
    case LC_SETTING_SIGNED: {
        long long x = strtoll(v, &rest, 0);
        long long lim = size < 8 ? 1ll << (8 * size - 1) : 0;
        if (!v[0] || rest == v || *rest)
            return snprintf(why, wsize, "'%s' is not a whole number", v), -1;
        if (errno == ERANGE || (lim && (x >= lim || x < -lim)))
            return snprintf(why, wsize, "%s is too large", v), -1;
        store_whole(at, size, (uint64_t)x);
        *num = (double)x;
        return 0;
    }
    case LC_SETTING_REAL: {
        double x = strtod(v, &rest);
        if (!v[0] || rest == v || *rest)
            return snprintf(why, wsize, "'%s' is not a number", v), -1;
        *(double *)at = x;
        *num = x;
        return 0;
    }
    case LC_SETTING_TEXT:
        if (row->nonempty && !v[0])
            return snprintf(why, wsize, "is empty"), -1;
        free(*(char **)at);
        *(char **)at = lc_xstrdup(v);
        return 0;
    case LC_SETTING_SIZE: {
        uint64_t x;
        if (row->auto_ok && strcmp(v, "auto") == 0)
            x = LC_SETTING_SIZE_AUTO;
        else if (!lc_parse_bytes(v, &x))
            return snprintf(why, wsize, "'%s' is not a size (use %s)", v,
                            row->hint ? row->hint
                                      : "a number with an optional unit: 512M, 6G, 8GiB"),
                   -1;
        *(uint64_t *)at = x;
        return 0;
    }
    case LC_SETTING_ENUM: {
        const char *names[32];
        size_t n = 0;
        for (; row->values[n].name && n < 31; n++) {
            names[n] = row->values[n].name;
            if (strcmp(v, names[n]) == 0) {
                *(int *)at = row->values[n].value;
                return 0;
            }
        }
        names[n] = NULL;
        char list[200];
        enum_names(row->values, list, sizeof list);
        const char *near = lc_closest_word(v, names);
        if (near)
            snprintf(why, wsize, "'%s' is not known (did you mean '%s'? use %s)", v, near, list);
        else
            snprintf(why, wsize, "'%s' is not known (use %s)", v, list);
        return -1;
    }
    default:
        return snprintf(why, wsize, "cannot be a single value"), -1;
    }
}

/* "1 to 256", "a value in (0, 1]", "above 0", ...: a row's range. */
void lc_setting_range_text(const lc_setting *row, bool whole, char *buf, size_t size)
{
    char lo[32], hi[32];
    snprintf(lo, sizeof lo, whole ? "%.0f" : "%g", row->min);
    snprintf(hi, sizeof hi, whole ? "%.0f" : "%g", row->max);
    bool has_lo = row->range & LC_RANGE_MIN, has_hi = row->range & LC_RANGE_MAX;
    bool open_lo = row->range & LC_RANGE_MIN_OPEN, open_hi = row->range & LC_RANGE_MAX_OPEN;
    if (has_lo && has_hi && !open_lo && !open_hi)
        snprintf(buf, size, "%s to %s", lo, hi);
    else if (has_lo && has_hi)
        snprintf(buf, size, "a value in %c%s, %s%c", open_lo ? '(' : '[', lo, hi,
                 open_hi ? ')' : ']');
    else if (has_lo)
        snprintf(buf, size, "%s %s", open_lo ? "above" : "at least", lo);
    else
        snprintf(buf, size, "%s %s", open_hi ? "below" : "at most", hi);
}

static bool in_range(const lc_setting *row, double v)
{
    if ((row->range & LC_RANGE_MIN) &&
        !((row->range & LC_RANGE_MIN_OPEN) ? v > row->min : v >= row->min))
        return false;
    if ((row->range & LC_RANGE_MAX) &&
        !((row->range & LC_RANGE_MAX_OPEN) ? v < row->max : v <= row->max))
        return false;
    return !isnan(v);
}

/* A scalar node read as one value of type (a row's, or a list's item). */
static void read_scalar(lc_reading *r, const lc_setting *row, lc_setting_type type, size_t size,
                        const lc_ynode *node, void *at, const char *path, int key_line, int key_col)
{
    if (node->kind != LC_YNODE_SCALAR) {
        lc_reading_problem(r, node->line, node->col, path, "a %s, where a single value belongs",
                           node->kind == LC_YNODE_MAP ? "mapping" : "list");
        return;
    }
    /* Parsed into a scratch copy first: a refused value leaves the default. */
    unsigned char scratch[16] = {0};
    void *dest = type == LC_SETTING_TEXT ? at : scratch;
    double num = 0;
    char why[256];
    if (parse_scalar(type, row, size, node->text, dest, &num, why, sizeof why) != 0) {
        lc_reading_problem(r, node->line, node->col, path, "%s", why);
        return;
    }
    bool number = type == LC_SETTING_WHOLE || type == LC_SETTING_SIGNED || type == LC_SETTING_REAL;
    if (number && row->range && !r->defaults && !in_range(row, num)) {
        bool whole = type != LC_SETTING_REAL;
        char range[96];
        lc_setting_range_text(row, whole, range, sizeof range);
        if (whole && row->min == 0 && num < 0)
            lc_reading_problem(r, key_line, key_col, path, "%s is negative (use %s)", node->text,
                               range);
        else
            lc_reading_problem(r, key_line, key_col, path, "%s is out of range (use %s)",
                               whole ? node->text : (snprintf(why, sizeof why, "%g", num), why),
                               range);
    }
    if (type != LC_SETTING_TEXT)
        memcpy(at, scratch,
               type == LC_SETTING_BOOL                              ? sizeof(bool)
               : type == LC_SETTING_ENUM                            ? sizeof(int)
               : type == LC_SETTING_REAL || type == LC_SETTING_SIZE ? 8
                                                                    : size);
}

/* ---- blocks and lists ---- */

static void read_list(lc_reading *r, const lc_setting *row, const lc_ynode *node, void *block,
                      const char *path, int key_line, int key_col)
{
    if (node->kind != LC_YNODE_SEQ) {
        if (node->kind == LC_YNODE_MAP)
            lc_reading_problem(r, node->line, node->col, path, "a mapping, where a list belongs");
        else
            lc_reading_problem(r, node->line, node->col, path, "'%s' where a list belongs",
                               node->text);
        return;
    }
    if (node->n < row->min_items || (row->max_items && node->n > row->max_items)) {
        char range[64];
        if (row->max_items)
            snprintf(range, sizeof range, "%u to %u", row->min_items, row->max_items);
        else
            snprintf(range, sizeof range, "at least %u", row->min_items);
        lc_reading_problem(r, key_line, key_col, path, "%zu given (list %s)", node->n, range);
    }
    bool blocks = row->item == LC_SETTING_BLOCK;
    size_t item = blocks ? row->block->size : row->item_size;
    unsigned char *arr = lc_xcalloc(node->n ? node->n : 1, item);
    for (size_t i = 0; i < node->n; i++) {
        const lc_ynode *kid = node->kids[i];
        char sub[160];
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        lc_reading_key(r, sub, kid->line, kid->col);
        if (!blocks) {
            read_scalar(r, row, row->item, row->item_size, kid, arr + i * item, sub, kid->line,
                        kid->col);
            continue;
        }
        lc_settings_defaults(row->block, arr + i * item);
        if (kid->kind != LC_YNODE_MAP)
            lc_reading_problem(r, kid->line, kid->col, sub, "'%s' where a mapping belongs",
                               kid->kind == LC_YNODE_SCALAR ? kid->text : "");
        lc_settings_read_map(r, row->block, kid->kind == LC_YNODE_MAP ? kid : NULL, arr + i * item,
                             sub);
    }
    *(void **)((char *)block + row->offset) = arr;
    *(unsigned *)((char *)block + row->count) = (unsigned)node->n;
}

void lc_settings_read_value(lc_reading *r, const lc_setting *row, const lc_ynode *node, void *block,
                            const char *path, int key_line, int key_col)
{
    if (row->given)
        *(bool *)((char *)block + row->given - 1) = true;
    if (row->type == LC_SETTING_LIST) {
        read_list(r, row, node, block, path, key_line, key_col);
        return;
    }
    if (row->type != LC_SETTING_BLOCK) {
        read_scalar(r, row, row->type, row->size, node, (char *)block + row->offset, path, key_line,
                    key_col);
        return;
    }
    void **at = (void **)((char *)block + row->offset);
    if (!*at)
        *at = lc_settings_new_block(row->block);
    if (node->kind != LC_YNODE_MAP) {
        lc_reading_problem(r, node->line, node->col, path, "'%s' where a mapping belongs",
                           node->kind == LC_YNODE_SCALAR ? node->text : "");
        return;
    }
    lc_settings_read_map(r, row->block, node, *at, path);
}

bool lc_reading_full(const lc_reading *r)
{
    return lc_problems_full(&r->marks->problems);
}

void lc_reading_unknown_key(lc_reading *r, const lc_ynode *key, const char *path,
                            const char *const *names)
{
    if (lc_reading_full(r)) { /* only counted: no "did you mean" to work out */
        lc_reading_problem(r, key->line, key->col, path, "unknown key");
        return;
    }
    const char *k = key->text ? key->text : "?";
    const char *near = lc_closest_word(k, names);
    char list[400] = "";
    size_t n = 0;
    while (names[n])
        n++;
    if (!near && n <= 10) {
        size_t used = 0;
        for (size_t i = 0; i < n && used < sizeof list; i++) {
            int m = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
            if (m > 0)
                used += (size_t)m;
        }
    }
    if (near)
        lc_reading_problem(r, key->line, key->col, path, "unknown key (did you mean '%s'?)", near);
    else if (list[0])
        lc_reading_problem(r, key->line, key->col, path, "unknown key (the keys are %s)", list);
    else
        lc_reading_problem(r, key->line, key->col, path, "unknown key");
}

/* A key of map that is no setting but a misspelling of `want` (whose
 * "unknown key (did you mean ...)" then says the cause of its absence). */
static bool misspelt_in(const lc_settings *b, const lc_ynode *map, const char *const *names,
                        const char *want)
{
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const lc_ynode *key = map->kids[i];
        if (key->kind == LC_YNODE_SCALAR && !lc_setting_find(b, key->text)) {
            const char *near = lc_closest_word(key->text, names);
            if (near && !strcmp(near, want))
                return true;
        }
    }
    return false;
}

void lc_settings_read_map(lc_reading *r, const lc_settings *b, const lc_ynode *map, void *block,
                          const char *path)
{
    if (!map)
        return;
    const char *names[96];
    size_t n_names = 0;
    for (const lc_setting *row = b->rows; row->key && n_names + 1 < 96; row++)
        names[n_names++] = row->key;
    names[n_names] = NULL;
    /* The rows given so far: a key given twice is found in constant time,
     * so that a mapping of a million keys reads in linear time. */
    size_t n_rows = 0;
    while (b->rows[n_rows].key)
        n_rows++;
    bool *given = lc_xcalloc(n_rows + 1, sizeof *given);
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const lc_ynode *key = map->kids[i], *value = map->kids[i + 1];
        if (key->kind != LC_YNODE_SCALAR) {
            lc_reading_problem(r, key->line, key->col, path, "a key that is not a word");
            continue;
        }
        char sub[160];
        snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", key->text);
        const lc_setting *row = lc_setting_find(b, key->text);
        if (!row) {
            lc_reading_unknown_key(r, key, sub, names);
            continue;
        }
        if (given[row - b->rows]) {
            lc_reading_problem(r, key->line, key->col, sub, "given twice (keep one)");
            continue;
        }
        given[row - b->rows] = true;
        lc_reading_key(r, sub, key->line, key->col);
        lc_settings_read_value(r, row, value, block, sub, key->line, key->col);
    }
    for (const lc_setting *row = b->rows; row->key; row++) {
        bool found = given[row - b->rows];
        if (row->required && !found && !misspelt_in(b, map, names, row->key)) {
            char sub[160];
            snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", row->key);
            lc_reading_problem(r, map->line, map->col, sub, "missing (required%s%s)",
                               row->meaning ? ": " : "", row->meaning ? row->meaning : "");
        }
    }
    free(given);
}

/* ---- defaults, and freeing ---- */

void lc_settings_defaults(const lc_settings *b, void *block)
{
    lc_config_marks none;
    lc_config_marks_init(&none);
    lc_reading r = {.marks = &none, .stage = -1, .defaults = true};
    for (const lc_setting *row = b->rows; row->key; row++) {
        void *at = (char *)block + row->offset;
        if (!row->def)
            continue;
        if (row->type == LC_SETTING_BLOCK) { /* "{}": the block with its own defaults */
            *(void **)at = lc_settings_new_block(row->block);
            continue;
        }
        lc_ynode node = {.kind = LC_YNODE_SCALAR, .text = (char *)row->def, .plain = true};
        read_scalar(&r, row, row->type, row->size, &node, at, row->key, 0, 0);
        if (none.problems.n)
            lc_fatal("the default of setting '%s' (%s) does not read: %s", row->key, row->def,
                     none.problems.v[0].text);
    }
    lc_config_marks_fini(&none);
}

void *lc_settings_new_block(const lc_settings *b)
{
    void *block = lc_xcalloc(1, b->size ? b->size : 1);
    lc_settings_defaults(b, block);
    return block;
}

void lc_settings_free_fields(const lc_settings *b, void *block_)
{
    unsigned char *block = block_;
    for (const lc_setting *row = b->rows; row->key; row++) {
        void **at = (void **)(block + row->offset);
        if (row->type == LC_SETTING_TEXT) {
            free(*at);
        } else if (row->type == LC_SETTING_BLOCK) {
            lc_settings_free_block(row->block, *at);
        } else if (row->type == LC_SETTING_LIST && *at) {
            unsigned n = *(unsigned *)(block + row->count);
            for (unsigned i = 0; i < n; i++) {
                if (row->item == LC_SETTING_TEXT)
                    free(((char **)*at)[i]);
                else if (row->item == LC_SETTING_BLOCK)
                    lc_settings_free_fields(row->block,
                                            (unsigned char *)*at + i * row->block->size);
            }
            free(*at);
        }
    }
}

void lc_settings_free_block(const lc_settings *b, void *block)
{
    if (!block)
        return;
    lc_settings_free_fields(b, block);
    free(block);
}

void lc_config_marks_init(lc_config_marks *m)
{
    memset(m, 0, sizeof *m);
    lc_problems_init(&m->problems);
}

void lc_config_marks_fini(lc_config_marks *m)
{
    free(m->keys);
    lc_problems_fini(&m->problems);
    free(m->stage_unknown_key);
    memset(m, 0, sizeof *m);
}

const lc_config_key *lc_config_marks_find(const lc_config_marks *m, const char *path)
{
    for (size_t i = 0; i < m->n_keys; i++)
        if (strcmp(m->keys[i].path, path) == 0)
            return &m->keys[i];
    return NULL;
}

const lc_config_key *lc_config_marks_place(const lc_config_marks *m, const char *path)
{
    char at[LC_PROBLEM_PATH_MAX];
    snprintf(at, sizeof at, "%s", path);
    while (at[0]) {
        const lc_config_key *k = lc_config_marks_find(m, at);
        if (k)
            return k;
        /* One key up: without its last ".key" or "[i]". */
        char *dot = strrchr(at, '.'), *item = strrchr(at, '[');
        char *cut = !dot ? item : !item ? dot : dot > item ? dot : item;
        if (!cut)
            break;
        *cut = '\0';
    }
    return NULL;
}
