/*
 * settings: a block of configuration described as data. One table of rows
 * per block (a stage class's, a nested block such as position_weights, the
 * global keys, a stage's output queue), each row a key: its type, where its
 * value lives in the block's struct, its default (or required, or what
 * absent means), its range, a line of meaning and an example.
 *
 * Everything about a setting is made from its row: the YAML reader
 * (pipeline/config_read.c) writes the defaults, reads and checks the
 * values (type, range, required, unknown keys with the nearest one, each
 * with its line and column) and frees the block; `lcmon --print-schema`,
 * the README's settings tables and the man page are printed from the rows
 * (pipeline/schema.c). A class's config_check keeps only the rules that
 * join several settings (one or the other, only with packed: true).
 *
 * Plain C data: no YAML here, so every layer can describe its settings.
 *
 *   typedef struct my_config { unsigned threads; char *path; } my_config;
 *   static const lc_setting my_settings[] = {
 *       LC_SETTING_ROW_RANGE(my_config, threads, "threads", LC_SETTING_WHOLE, "1", 1, 256,
 *                            "worker threads", "4"),
 *       {.key = "path", .type = LC_SETTING_TEXT, LC_SETTING_AT(my_config, path),
 *        .required = true, .meaning = "the pipe", .example = "/tmp/p"},
 *       {0},
 *   };
 *   ... .settings = {my_settings, sizeof(my_config)} in the class table.
 */
#ifndef LC_CORE_SETTINGS_H
#define LC_CORE_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum lc_setting_type {
    LC_SETTING_BOOL,   /* bool */
    LC_SETTING_WHOLE,  /* an unsigned integer of `size` bytes: 0 or more */
    LC_SETTING_SIGNED, /* a signed integer of `size` bytes */
    LC_SETTING_REAL,   /* double */
    LC_SETTING_TEXT,   /* char *, malloc'd (NULL when absent without a default) */
    LC_SETTING_ENUM,   /* an int (or enum) holding one of `values` */
    LC_SETTING_SIZE,   /* uint64_t bytes: a number with an optional unit (512M, 6G, 8GiB);
                        * "auto" too (LC_SETTING_SIZE_AUTO) when the row's `auto_ok` */
    LC_SETTING_BLOCK,  /* a pointer to a malloc'd struct described by `block` */
    LC_SETTING_LIST,   /* a malloc'd array of `item` (a value type, or LC_SETTING_BLOCK for
                        * structs of `block`) and its length, an unsigned at `count` */
} lc_setting_type;

/* A size given as "auto". */
#define LC_SETTING_SIZE_AUTO UINT64_MAX

/* One name of an enum and the value stored for it. Ended by a NULL name. */
typedef struct lc_setting_value {
    const char *name;
    int value;
} lc_setting_value;

/* Range bits: which of min and max apply, and whether they are excluded. */
enum {
    LC_RANGE_MIN = 1,
    LC_RANGE_MAX = 2,
    LC_RANGE_MIN_OPEN = 4, /* the value must be above min */
    LC_RANGE_MAX_OPEN = 8, /* the value must be below max */
};

struct lc_settings;

typedef struct lc_setting {
    const char *key;
    lc_setting_type type;
    size_t offset; /* of the value in the block's struct */
    size_t size;   /* of the value (whole numbers: 1, 2, 4 or 8 bytes) */
    /* The default as YAML text, read as a value is ("1", "true", "block",
     * "{}" for a block with its own defaults). NULL: required when
     * `required`, else absent means `off` ("off", "from RANK") and the
     * field stays zero (NULL). */
    const char *def;
    bool required;
    const char *off;
    /* When not 0: 1 + the offset of a bool set when the key is given, for
     * the rules that depend on it (LC_SETTING_GIVEN). */
    size_t given;
    /* Numbers (and a list's items): which bounds apply. */
    unsigned range;
    double min, max;
    bool nonempty;                   /* text: "" is refused */
    bool auto_ok;                    /* size: "auto" is accepted */
    const lc_setting_value *values;  /* enum */
    const struct lc_settings *block; /* block, or a list of blocks */
    lc_setting_type item;            /* list: the type of each item */
    size_t item_size;                /* list of values: bytes of each */
    size_t count;                    /* list: offset of its unsigned length */
    unsigned min_items, max_items;   /* list: its length (max 0: no bound) */
    const char *meaning;             /* one line, for the docs */
    const char *example;             /* a value as YAML text */
    const char *hint;                /* what to give, for a value of the wrong type */
} lc_setting;

/* A block: its rows (ended by a row with a NULL key) and its struct. */
typedef struct lc_settings {
    const lc_setting *rows;
    size_t size;
} lc_settings;

#define LC_SETTING_AT(st, field) .offset = offsetof(st, field), .size = sizeof(((st *)0)->field)
#define LC_SETTING_GIVEN(st, field) .given = offsetof(st, field) + 1
#define LC_SETTING_RANGE(lo, hi) .range = LC_RANGE_MIN | LC_RANGE_MAX, .min = (lo), .max = (hi)
#define LC_SETTING_LIST_OF(st, field, n_field, item_type)                                          \
    .type = LC_SETTING_LIST, .offset = offsetof(st, field), .size = sizeof(((st *)0)->field),      \
    .count = offsetof(st, n_field), .item = (item_type), .item_size = sizeof(*((st *)0)->field)

/* Short rows, for a key with a default: its struct's field, key, type,
 * default, meaning and example (and its range). */
#define LC_SETTING_ROW(st, field, k, t, d, what, ex)                                               \
    {                                                                                              \
        .key = (k), .type = (t), LC_SETTING_AT(st, field), .def = (d), .meaning = (what),          \
        .example = (ex)                                                                            \
    }
#define LC_SETTING_ROW_RANGE(st, field, k, t, d, lo, hi, what, ex)                                 \
    {                                                                                              \
        .key = (k), .type = (t), LC_SETTING_AT(st, field), .def = (d), LC_SETTING_RANGE(lo, hi),   \
        .meaning = (what), .example = (ex)                                                         \
    }

/* A macro's value as the text of a default: LC_SETTING_STR(LC_PACK_BLOCK_DEFAULT). */
#define LC_SETTING_STR(x) LC_SETTING_STR_(x)
#define LC_SETTING_STR_(x) #x

/* The row of key in a block; NULL when there is none. */
static inline const lc_setting *lc_setting_find(const lc_settings *b, const char *key)
{
    for (const lc_setting *r = b ? b->rows : NULL; r && r->key; r++)
        if (strcmp(r->key, key) == 0)
            return r;
    return NULL;
}

#endif
