/*
 * chunk_reader: every chunk of every source, once, in order: the sequential
 * (validation) counterpart of shuffling_chunk_pool.
 *
 * One thread, so that chunks leave in the order their sources arrive and, in
 * a source, in member order. Global indices count the chunks emitted. A chunk
 * that does not decompress or has the wrong size is logged with its file and
 * member, counted and skipped. The scan marker is passed over: a sequential
 * run ends when its input ends.
 *
 * Ranks. With world size N > 1 (RANK and WORLD_SIZE, as torchrun sets them),
 * rank r reads only the chunks the pool would give it: those whose
 * lc_share_of(file key, member index, N) is r. The ranks' runs are disjoint
 * and together cover every chunk once; each keeps file and member order.
 *
 * Progress (the batch stream's): the files read to their end and the chunks
 * read go to the run's progress (stages/stage.h), with epoch 1 of 1.
 */
#include "stages/stage.h"

#include "core/clock.h"
#include "core/log.h"
#include "format/lc0/chunk.h"
#include "format/lc0/chunk_source.h"
#include "format/gzip.h"
#include "stages/items.h"

typedef struct reader_config {
    int unused; /* the block takes no settings yet */
} reader_config;

static const lc_setting reader_settings[] = {
    {0},
};

typedef struct reader {
    atomic_uint_fast64_t n_chunks, n_bad, n_sources, n_other_rank;
} reader;

static void reader_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    reader *r = s->priv;
    const uint32_t world = s->env->world_size ? s->env->world_size : 1;
    uint64_t global = 0;
    lc_run_progress *progress = s->env->progress;
    if (progress) {
        atomic_store(&progress->epoch, 1);
        atomic_store(&progress->epochs, 1);
    }
    lc_source_item in;
    while (lc_run_state_check(&s->run, meter) && lc_queue_get(s->input, &in, meter) == 0) {
        if (!in.source)
            continue;
        atomic_fetch_add(&r->n_sources, 1);
        size_t n = lc_chunk_source_count(in.source);
        bool closed = false;
        const char *key = lc_chunk_source_key(in.source);
        for (size_t m = 0; m < n && !closed && lc_run_state_check(&s->run, meter); m++) {
            if (world > 1 &&
                lc_share_of(key, lc_chunk_source_member(in.source, m), world) != s->env->rank) {
                atomic_fetch_add(&r->n_other_rank, 1);
                continue;
            }
            lc_chunk_data data = {0};
            lc_error err;
            lc_error_clear(&err);
            int rc = lc_chunk_source_load(in.source, m, LC_INFLATE_AUTO, &data, &err);
            if (rc != 0) {
                atomic_fetch_add(&r->n_bad, 1);
                LC_WARN("%s: skipping chunk: %s", s->name, err.msg[0] ? err.msg : lc_strerror(rc));
                continue;
            }
            lc_chunk_item item = {
                .data = data.data,
                .version = data.version,
                .record_size = (uint32_t)data.record_size,
                .n_records = (uint32_t)data.n_records,
                .use_count = 0,
                .global_index = global++,
                .source = lc_chunk_source_ref(in.source),
                .member = (uint32_t)m,
                .content = data.content,
            };
            item.seq = item.global_index + 1; /* its arrival: read now */
            item.arrived_ms = (uint32_t)(lc_now_ns() / 1000000u);
            if (lc_stage_emit(s, &item, meter) != 0) {
                lc_item_chunk.dispose(&item);
                closed = true;
            } else {
                atomic_fetch_add(&r->n_chunks, 1);
                if (progress)
                    atomic_fetch_add(&progress->records, 1);
            }
        }
        lc_chunk_source_unref(in.source);
        if (progress && !closed)
            atomic_fetch_add(&progress->files_done, 1);
        if (closed)
            return;
    }
}

static const lc_metric_info reader_metrics[] = {
    {"sources", "sources", LC_SHOW_TOTAL, 0, "sources", "src", LC_METRIC_AT(reader, n_sources)},
    {"chunks", "chunks", LC_SHOW_TOTAL, 0, "chunks", LC_METRIC_AT(reader, n_chunks)},
    {"other_rank_chunks", "chunks", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "for other ranks",
     "other", LC_METRIC_AT(reader, n_other_rank)},
    {"bad_chunks", "chunks", .kind = LC_METRIC_BAD, LC_METRIC_AT(reader, n_bad)},
    {0},
};

const lc_stage_class lc_chunk_reader_class = {
    .type_name = "chunk_reader",
    .summary = "reads every chunk of every source once, in order (sequential runs)",
    .flags = LC_STAGE_FINITE,
    .input = &lc_item_source,
    .output = &lc_item_chunk,
    .priv_size = sizeof(reader),
    .worker = reader_worker,
    .workers = "reader",
    .settings = {reader_settings, sizeof(reader_config)},
    .config_check = NULL,
    .metrics = reader_metrics,
};
