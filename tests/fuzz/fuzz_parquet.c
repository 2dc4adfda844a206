/*
 * fuzz_parquet: a Parquet file from any writer, through the public API.
 *
 * The bytes are written to a scratch file, opened (magic, footer, Thrift
 * metadata, schema), and every column of every row group is read into one
 * reused lc_parquet_column, as the game source does.
 *
 * Invariants: a refused open leaves nothing and says why; the schema's
 * columns have names; a column that reads has the row group's row count,
 * the kind its schema announced, string offsets that ascend within the
 * bytes, and validity flags that are 0 or 1 with nulls only in optional
 * columns; a failed read leaves n == 0 and names the file.
 */
#include "fuzz.h"

#include "format/parquet/parquet.h"

#include <string.h>

#define MAX_ROW_GROUPS 64
#define MAX_COLUMNS 64

static void check_column(const lc_parquet_file *f, size_t rg, const lc_parquet_column_info *info,
                         const lc_parquet_column *c)
{
    FUZZ_CHECK(c->kind == info->kind);
    FUZZ_CHECK((int64_t)c->n == lc_parquet_row_group_rows(f, rg));
    for (size_t i = 0; i < c->n; i++) {
        FUZZ_CHECK(c->valid[i] <= 1);
        FUZZ_CHECK(c->valid[i] || info->optional);
    }
    if (c->kind == LC_PARQUET_KIND_STRING) {
        FUZZ_CHECK(c->offsets[0] == 0);
        for (size_t i = 0; i < c->n; i++) {
            FUZZ_CHECK(c->offsets[i] <= c->offsets[i + 1]);
            size_t len = 0;
            const char *s = lc_parquet_string(c, i, &len);
            FUZZ_CHECK(len == c->offsets[i + 1] - c->offsets[i]);
            FUZZ_CHECK(len == 0 || s != NULL);
        }
        FUZZ_CHECK(c->offsets[c->n] == c->n_bytes);
    } else if (c->n) {
        FUZZ_CHECK(c->kind == LC_PARQUET_KIND_INT64 ? c->i64 != NULL : c->f64 != NULL);
        /* Touch every value, so that ASan sees the whole array. */
        volatile uint64_t sum = 0;
        for (size_t i = 0; i < c->n; i++)
            sum +=
                c->kind == LC_PARQUET_KIND_INT64 ? (uint64_t)c->i64[i] : (uint64_t)(c->f64[i] > 0);
        (void)sum;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("table.parquet", data, size);
    lc_parquet_file *f = (lc_parquet_file *)1;
    lc_error err = {0};
    if (lc_parquet_open(path, &f, &err) < 0) {
        FUZZ_CHECK(err.msg[0] != '\0');
        return 0;
    }
    size_t n_rg = lc_parquet_num_row_groups(f), n_col = lc_parquet_num_columns(f);
    FUZZ_CHECK(lc_parquet_column_at(f, n_col) == NULL);
    FUZZ_CHECK(lc_parquet_row_group_rows(f, n_rg) == 0);
    for (size_t col = 0; col < n_col; col++) {
        const lc_parquet_column_info *info = lc_parquet_column_at(f, col);
        FUZZ_CHECK(info && info->name);
        if (info->kind != LC_PARQUET_KIND_NONE && strchr(info->name, '.') == NULL) {
            int found = lc_parquet_find_column(f, info->name);
            /* The first readable column of that name (names may repeat). */
            FUZZ_CHECK(found >= 0 && (size_t)found <= col);
        }
    }
    lc_parquet_column c;
    lc_parquet_column_init(&c);
    for (size_t rg = 0; rg < n_rg && rg < MAX_ROW_GROUPS; rg++) {
        FUZZ_CHECK(lc_parquet_row_group_rows(f, rg) >= 0);
        for (size_t col = 0; col < n_col && col < MAX_COLUMNS; col++) {
            const lc_parquet_column_info *info = lc_parquet_column_at(f, col);
            err = (lc_error){0};
            int rc = lc_parquet_read_column(f, rg, col, &c, &err);
            if (rc == 0) {
                FUZZ_CHECK(info->kind != LC_PARQUET_KIND_NONE);
                check_column(f, rg, info, &c);
            } else {
                FUZZ_CHECK(c.n == 0 && strstr(err.msg, path));
            }
        }
    }
    lc_parquet_column_fini(&c);
    lc_parquet_close(f);
    return 0;
}
