/*
 * chunk_validator: drops chunks whose records are malformed.
 *
 * N worker threads check every record of every chunk (format/lc0/frame.h,
 * lc_record_check, over a chunk with lc_chunk_check): a known version and input format, finite
 * probabilities within [-1, 1], best and played indices inside the policy and pointing at legal
 * moves. A chunk with any bad record is dropped whole, logged once with its file and member, and
 * counted under the reason of its first bad record. A chunk checked upstream (LC_ITEM_CHECKED: the
 * pool's chunk store applies these rules to what it stores) is passed on as it is and counted
 * apart.
 */
#include "stages/stage.h"

#include "core/log.h"
#include "format/lc0/chunk.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/frame.h"
#include "stages/items.h"

#include <stdio.h>
#include <string.h>

typedef struct validator_config {
    unsigned threads;
} validator_config;

static const lc_setting validator_settings[] = {
    LC_SETTING_THREADS(validator_config, threads, "1", 256),
    {0},
};

#define N_REASONS LC_RECORD_CHECK_REASONS

typedef struct validator {
    atomic_uint_fast64_t n_ok, n_checked_upstream, n_bad[N_REASONS + 1];
} validator;

static void validator_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    validator *v = s->priv;
    /* Chunks move in blocks (stages/stage.h): at low sampling rates they
     * are many and each is little work here. */
    lc_stage_inbox ib;
    lc_stage_outbox ob;
    lc_stage_inbox_init(&ib, s->input, 8);
    lc_stage_outbox_init(&ob, s, 8);
    lc_stage_inbox_in_turns(&ib, s, &ob); /* deterministic mode: the input's order */
    lc_chunk_item c;
    bool open = true;
    while (open && lc_run_state_check(&s->run, meter) &&
           lc_stage_inbox_get(&ib, &c, &ob, meter) == 0) {
        if (c.flags & LC_ITEM_CHECKED) {
            open = lc_stage_outbox_put(&ob, &c, meter) == 0;
            if (open)
                atomic_fetch_add(&v->n_checked_upstream, 1);
            continue;
        }
        const char *reason = NULL;
        uint32_t bad_at = 0;
        const lc_chunk_data records = {.data = c.data,
                                       .version = c.version,
                                       .record_size = c.record_size,
                                       .n_records = c.n_records};
        if (lc_chunk_check(&records, &bad_at, &reason) != 0) {
            atomic_fetch_add(&v->n_bad[lc_record_check_reason_index(reason)], 1);
            LC_WARN("%s: dropping %s: member '%s': record %u: %s", s->name,
                    c.source ? lc_chunk_source_path(c.source) : "?",
                    c.source ? lc_chunk_source_chunk_name(c.source, c.member) : "?", bad_at,
                    reason);
            if (c.source) /* the pool drops it for good instead of drawing it again */
                lc_chunk_source_mark_bad(c.source, c.member);
            lc_item_chunk.dispose(&c);
            continue;
        }
        open = lc_stage_outbox_put(&ob, &c, meter) == 0;
        if (open)
            atomic_fetch_add(&v->n_ok, 1);
    }
    lc_stage_inbox_fini(&ib);
    if (open && !lc_run_state_stopping(&s->run))
        lc_stage_outbox_flush(&ob, meter);
    lc_stage_outbox_fini(&ob);
}

#define REASON_ROW(r) REASON_##r,
enum { LC_RECORD_CHECK_REASON_LIST(REASON_ROW) REASON_other };
#undef REASON_ROW
#define BAD_REASON(r)                                                                              \
    {"bad_" #r, "chunks", .kind = LC_METRIC_BAD, LC_METRIC_AT(validator, n_bad[REASON_##r])},
static const lc_metric_info validator_metrics[] = {
    /* With the pool's store, every chunk comes checked: then only the
     * second shows. */
    {"valid_chunks", "chunks", LC_SHOW_TOTAL, LC_SHOW_NONZERO, "valid chunks", "valid",
     LC_METRIC_AT(validator, n_ok)},
    {"checked_upstream", "chunks", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
     "checked by the pool's store", "by the store", LC_METRIC_AT(validator, n_checked_upstream)},
    LC_RECORD_CHECK_REASON_LIST(BAD_REASON) BAD_REASON(other){0},
};
#undef BAD_REASON

static unsigned validator_threads(const void *config)
{
    return ((const validator_config *)config)->threads;
}

const lc_stage_class lc_chunk_validator_class = {
    .type_name = "chunk_validator",
    .summary = "drops chunks with malformed records, counting each reason",
    .input = &lc_item_chunk,
    .output = &lc_item_chunk,
    .priv_size = sizeof(validator),
    .worker = validator_worker,
    .threads = validator_threads,
    .workers = "workers",
    .settings = {validator_settings, sizeof(validator_config)},
    .config_check = NULL,
    .metrics = validator_metrics,
};
