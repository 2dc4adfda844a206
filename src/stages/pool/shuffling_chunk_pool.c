/*
 * shuffling_chunk_pool: a sliding window of the newest chunks, drawn in
 * shuffled order, with the anchor that tells a trainer how many new games
 * arrived.
 *
 * Threads. One ingestion thread takes chunk sources from the input and adds
 * them to the window; N loading threads draw chunk indices and read and
 * inflate those chunks outside the pool's lock, then emit them. All window
 * state lives under `mu`. This file holds the stage: its settings, the
 * loading threads' loop, the life cycle, metrics and commands; the
 * ingestion is chunk_pool_ingest.c, the draws and loads chunk_pool_load.c,
 * sharing the pool's state through stages/pool/chunk_pool.h.
 *
 * Window. Until the initial scan is complete nothing is emitted: sources are
 * collected, sorted by key, and the newest are kept until they hold at least
 * chunk_pool_size chunks. The window itself (global indices, eviction of
 * whole sources, draws without replacement in passes, use counts, the
 * sharding of chunks between ranks, the anchor's count) is a data structure
 * of its own, stages/pool/chunk_window.h. A chunk that fails to load is dropped
 * for good, and so is one that a stage downstream marked bad on its source
 * (lc_chunk_source_mark_bad: the validator does), at its next draw; new
 * indices join the current pass, and an empty pass starts a new one over
 * the window (counted as a reshuffle).
 *
 * The chunk store. With `store_bytes` above 0 (the default), each chunk is
 * read, inflated, checked and packed once in its life in the window, by
 * the loading thread that first draws it, and later draws hand out its
 * packed form; stages/pool/chunk_store.h says how and why, and what happens when
 * the budget is full. The packed forms live in the window's entries.
 *
 * Hanse sampling (`hanse:`, stages/pool/hanse.h). A chunk is weighed when first
 * read (before it is packed), the weight kept in its window entry; a draw
 * whose weight is known is accepted or skipped for the pass under `mu`, one
 * whose weight is not yet known is judged after the read.
 *
 * Sharding. With world size N > 1, rank r keeps only the chunks whose
 * identity hash is r modulo N (chunk_window.h): ranks agree whatever order
 * they find files in, and together they cover every chunk exactly once. The
 * window size counts this rank's chunks.
 *
 * Fresh lane. The `fresh` command (a trainer that waited for new games and
 * wants them now: lcmon.Control.fresh, rl_cycles) puts the chunks that
 * joined since the previous request into a list drawn before the pass
 * (chunk_window.h), and, under `mu` so that no draw comes between, drops
 * what the queues below the pool hold (lc_stage_env.drain_below): the
 * blocks workers below took from them and what they made of those go too
 * (stages/stage.h's inbox). Their chunks go out flagged LC_ITEM_FRESH, and
 * the pass waits while they load, so that nothing drawn after the request
 * gets ahead of them; the unpacker marks the first position of each, which
 * the sampler passes around its reservoir. Every chunk handed out carries
 * its number (global index + 1) and its source's arrival in the window,
 * for the batches' freshness (format/batch_stream.h).
 *
 * Anchor. chunks_since_anchor counts the chunks (of every rank: all ranks see
 * the same files and report the same number) of sources newer than the
 * anchor: during the initial load, sources inside the window that come
 * after the anchor in the pool's `order` (by name, mtime or the number in
 * the name: stages/pool/source_order.h); afterwards, every source ingested. The
 * anchor the initial load counts from is the configuration's `anchor:`
 * (lcmon --anchor KEY writes it there before anything starts). `set`
 * changes the key and leaves the count (upstream's SetAnchor); `recount`
 * (lcmon's own) changes the key and counts again: the chunks of the
 * window's sources after the key, as the initial load would count them
 * now, exact when the key's source is in the window; with sharding it is
 * refused (a rank's window lacks the other ranks' sources). `reset` sets the key to the newest
 * source (in that order, whichever rank keeps its chunks), returns the
 * count and zeroes it; it is refused until the initial load has added its
 * count, its window and the newest key, all under one hold of `mu`. A
 * chunk found bad when drawn (a failed load or check, or a mark downstream)
 * leaves the count if it was in it (and the window's count):
 * a trainer waits for good games. Each rank learns of its own share's bad
 * chunks only. With sharding, "the window" of the initial count is the window
 * of all ranks together, worked out from the files alone: the newest sources
 * holding at least chunk_pool_size * world_size chunks. Each rank's own window
 * reaches back a little more or less, but the count and the newest key are
 * the same on every rank, so a trainer may ask any of them.
 */
#include "stages/pool/chunk_pool.h"

#include "core/deque.h"
#include "core/log.h"
#include "core/text.h"
#include "format/lc0/chunk.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The codecs of the store's blocks (format/lc0/packed_chunk.h). */
static const lc_setting_value store_codecs[] = {
    {"lz4", LC_PACK_LZ4},
    {"zstd", LC_PACK_ZSTD},
    {NULL, 0},
};

static const lc_setting pool_settings[] = {
    {.key = "chunk_pool_size",
     .type = LC_SETTING_WHOLE,
     LC_SETTING_AT(pool_config, chunk_pool_size),
     .required = true,
     LC_SETTING_RANGE(1, 100000000),
     .meaning = "chunks in the window of the newest sources drawn from",
     .example = "500000"},
    LC_SETTING_THREADS(pool_config, threads, "2", 256),
    {.key = "anchor",
     .type = LC_SETTING_TEXT,
     LC_SETTING_AT(pool_config, anchor),
     .off = "none",
     .meaning = "the source key a checkpoint stored: chunks_since_anchor counts from it",
     .example = "training.123456.gz"},
    LC_SETTING_ROW(pool_config, inflate, "inflate", LC_SETTING_TEXT, "auto",
                   "the gzip decoder: auto, zlib or libdeflate", "zlib"),
    {.key = "store_bytes",
     .type = LC_SETTING_SIZE,
     LC_SETTING_AT(pool_config, store_bytes),
     .def = "auto",
     .auto_ok = true,
     .meaning = "memory of the chunk store: auto (a quarter of the machine's), 0 for none",
     .example = "6G",
     .hint = "auto, 0 for no store, or a number with an optional unit: 512M, 6G, 8GiB"},
    LC_SETTING_ROW_RANGE(pool_config, store_block, "store_block", LC_SETTING_WHOLE,
                         LC_SETTING_STR(LC_PACK_BLOCK_DEFAULT), 1, LC_PACK_BLOCK_MAX,
                         "positions a packed block of the store", "16"),
    {.key = "store_codec",
     .type = LC_SETTING_ENUM,
     LC_SETTING_AT(pool_config, store_codec),
     .def = LC_PACK_LZ4 == LC_PACK_CODEC_DEFAULT ? "lz4" : "zstd",
     .values = store_codecs,
     .meaning = "the store's blocks: lz4 decodes in half the CPU, zstd takes about 7% less "
                "memory (docs/chunk-store.md)",
     .example = "zstd"},
    {.key = "hanse",
     .type = LC_SETTING_BLOCK,
     LC_SETTING_AT(pool_config, hanse),
     .off = "off",
     .block = &lc_hanse_settings,
     .meaning = "Hanse sampling: a drawn chunk is taken by its weight",
     .example = "{threshold: 1, gamma: 1}"},
    {.key = "order",
     .type = LC_SETTING_ENUM,
     LC_SETTING_AT(pool_config, order),
     .def = "name",
     .values = lc_source_order_values,
     .meaning = "which sources are the newest: by name, modification time, or the number in "
                "the name (the legacy chunkparser's sort_type)",
     .example = "mtime"},
    {0},
};

static int pool_config_check(void *p, lc_problems *ps)
{
    pool_config *c = p;
    int rc = 0;
    if (!lc_pack_codec_built(c->store_codec))
        rc = lc_problem_add(ps, "store_codec",
                            "lz4 is not in this build (build with liblz4, Debian: liblz4-dev; "
                            "or use zstd)");
    if (c->hanse && lc_hanse_config_check(c->hanse, ps) != 0)
        rc = LC_ECONFIG;
    c->backend = LC_INFLATE_AUTO;
    if (strcmp(c->inflate, "zlib") == 0)
        c->backend = LC_INFLATE_ZLIB;
    else if (strcmp(c->inflate, "libdeflate") == 0)
        c->backend = LC_INFLATE_LIBDEFLATE;
    else if (strcmp(c->inflate, "auto") != 0)
        return lc_problem_add(ps, "inflate", "'%s' is not auto, zlib or libdeflate", c->inflate);
    if (!lc_inflate_backend_available(c->backend))
        return lc_problem_add(ps, "inflate", "%s is not available in this build (use auto)",
                              c->inflate);
    return rc;
}

/* A fresh draw is out (emitted or dropped): the pass may go on. */
static void fresh_out(pool *p)
{
    lc_mutex_lock(&p->mu);
    p->fresh_loading--;
    lc_cond_broadcast(&p->cond);
    lc_mutex_unlock(&p->mu);
}

/* Where a drawn chunk's game came from, for the batches' freshness. */
static void mark_origin(const draw *d, lc_chunk_item *item)
{
    item->seq = d->global + 1;
    item->arrived_ms = d->arrived_ms;
    if (d->fresh)
        item->flags |= LC_ITEM_FRESH;
}

/* A draw made into a chunk item: from the store, or read (false: nothing
 * to hand on, the chunk dropped or, with Hanse sampling, not taken). */
static bool load_draw(lc_stage *s, lc_pack_ctx *pack, draw *d, lc_chunk_item *item)
{
    pool *p = s->priv;
    *item = (lc_chunk_item){
        .use_count = d->use,
        .global_index = d->global,
        .source = d->src,
        .member = d->member,
    };
    if (d->packed) {
        atomic_fetch_add(&p->store.hits, 1);
        item->packed = d->packed;
        item->version = lc_packed_chunk_version(d->packed);
        item->n_records = lc_packed_chunk_positions(d->packed);
        item->flags = LC_ITEM_CHECKED;
        mark_origin(d, item);
        return true;
    }
    bool rejected = false;
    bool loaded = lc_chunk_pool_load(s, pack, d, item, &rejected);
    if (loaded && !rejected)
        mark_origin(d, item);
    if (d->weigh && lc_stage_in_turns(s)) { /* judged: the next draw may be made */
        lc_mutex_lock(&p->mu);
        p->weighing--;
        lc_cond_broadcast(&p->cond);
        lc_mutex_unlock(&p->mu);
    }
    if (loaded && rejected) { /* Hanse: weighed, then not taken (stored if it fits) */
        lc_item_chunk.dispose(item);
        loaded = false;
    } else if (!loaded) {
        lc_chunk_source_unref(d->src);
    }
    if (!loaded && d->fresh)
        fresh_out(p);
    return loaded;
}

/* Draws a turn in deterministic mode: fewer hand-offs between the loading
 * threads (a turn costs a wake-up) without changing the sequence. */
#define TURN_DRAWS 8

/* Draw up to `most` chunks under mu. After the first, only while the next
 * draw cannot wait (which would let go of mu: another thread's draw would
 * come between); Hanse sampling draws one at a time (its rejections let go
 * of mu now and then). */
static unsigned draw_some(lc_stage *s, pool *p, draw *d, unsigned most, lc_load_meter *meter)
{
    unsigned n = 0;
    while (n < most && (n == 0 || (p->initial_done && p->win.in_window > 0))) {
        d[n] = (draw){0};
        if (!lc_chunk_pool_draw_locked(s, p, &d[n], meter))
            break;
        n++;
    }
    return n;
}

/* Draws in a row from the store after which a loading thread gives back
 * LZ4's 256 KB (lc_pack_ctx_rest; remade at a tenth of a chunk's packing). */
#define PACK_REST_AFTER 64

/* A loading thread: draw, load, emit. In deterministic mode the draws are
 * handed on in the order they were made (stage.h's turns; the ticket is
 * taken with the draws, under mu). */
static void loader_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    pool *p = s->priv;
    const pool_config *c = s->config;
    lc_pack_ctx *pack =
        lc_chunk_store_on(&p->store)
            ? lc_pack_ctx_new_codec(c->store_codec, LC_PACK_LEVEL_DEFAULT, c->store_block)
            : NULL;
    bool turns = lc_stage_in_turns(s);
    unsigned most = turns && !p->hanse.cfg ? TURN_DRAWS : 1;
    draw d[TURN_DRAWS];
    lc_chunk_item items[TURN_DRAWS];
    bool have[TURN_DRAWS], open = true;
    unsigned from_store = 0;
    while (open && lc_run_state_check(&s->run, meter)) {
        lc_mutex_lock(&p->mu);
        unsigned n = draw_some(s, p, d, most, meter);
        uint64_t ticket = n && turns ? lc_stage_ticket(s) : 0;
        lc_mutex_unlock(&p->mu);
        if (n == 0)
            break;
        for (unsigned i = 0; i < n; i++) {
            if ((from_store = d[i].packed ? from_store + 1 : 0) == PACK_REST_AFTER)
                lc_pack_ctx_rest(pack);
            have[i] = load_draw(s, pack, &d[i], &items[i]);
        }
        bool mine = !turns || lc_stage_turn_wait(s, ticket, meter);
        for (unsigned i = 0; i < n; i++) {
            if (!have[i])
                continue;
            if (mine && open && lc_stage_emit(s, &items[i], meter) == 0) {
                atomic_fetch_add(&p->n_emitted, 1);
                if (d[i].fresh) {
                    atomic_fetch_add(&p->n_fresh_drawn, 1);
                    fresh_out(p);
                }
                continue;
            }
            lc_item_chunk.dispose(&items[i]);
            if (d[i].fresh)
                fresh_out(p);
            open = false;
        }
        if (turns && mine)
            lc_stage_turn_end(s);
    }
    lc_pack_ctx_free(pack);
}

static int pool_init(lc_stage *s, lc_error *err)
{
    (void)err;
    pool *p = s->priv;
    const pool_config *c = s->config;
    lc_mutex_init(&p->mu);
    lc_cond_init(&p->cond);
    lc_load_init(&p->ingest_meter);
    bool store_auto = c->store_bytes == LC_SETTING_SIZE_AUTO;
    lc_chunk_store_init(&p->store, store_auto, store_auto ? 0 : c->store_bytes);
    lc_hanse_init(&p->hanse, c->hanse, s->env->seed);
    p->newest_mtime_ns = -1;
    lc_chunk_window_init(&p->win, c->chunk_pool_size, &p->store, c->anchor, s->env->seed);
    return 0;
}

static int pool_start(lc_stage *s, lc_error *err)
{
    (void)err;
    pool *p = s->priv;
    if (s->env->world_size > 1)
        LC_INFO("%s: keeping the chunks of share %u of %u", s->name, s->env->rank,
                s->env->world_size);
    char name[32];
    snprintf(name, sizeof name, "%s-in", s->name);
    lc_thread_start(&p->ingest_thread, name, lc_chunk_pool_ingest, s);
    return 0;
}

static void pool_stop(lc_stage *s)
{
    pool *p = s->priv;
    lc_mutex_lock(&p->mu);
    lc_cond_broadcast(&p->cond);
    lc_mutex_unlock(&p->mu);
    lc_thread_join(&p->ingest_thread);
}

static void pool_fini(lc_stage *s)
{
    pool *p = s->priv;
    lc_load_fini(&p->ingest_meter);
    lc_chunk_window_fini(&p->win);
    lc_cond_destroy(&p->cond);
    lc_mutex_destroy(&p->mu);
}

enum {
    P_IN_WINDOW,
    P_SINCE_ANCHOR,
    P_SOURCES,
    P_RESHUFFLES,
    P_STORE_BYTES,
    P_STORE_HITS,
    P_STORE_TRANSCODES,
    P_STORE_BYTES_PER_POSITION,
    P_ANCHOR,
    P_COUNT_FROM,
    P_NEWEST_KEY,
    P_EMITTED,
    P_HANSE,
    P_DROPPED = P_HANSE + LC_HANSE_ROWS_,
    P_UNREADABLE,
    P_SOURCES_ADDED,
    P_REWRITTEN_SAME,
    P_REWRITTEN_REPLACED,
    P_EVICTED,
    P_NOT_KEPT,
    P_STALE_DRAWS,
    P_OTHER_RANK,
    P_FRESH_DRAWS,
    P_HELD,
    P_TOTAL,
    P_INITIAL_DONE,
    P_STORE_MISSES,
    P_STORE_OVER_BUDGET,
    P_STORE_CHUNKS,
    P_STORE_POSITIONS,
    P_STORE_BAD,
};

static const lc_chunk_store_rows store_rows = {
    .hits = P_STORE_HITS,
    .misses = P_STORE_MISSES,
    .transcodes = P_STORE_TRANSCODES,
    .over_budget = P_STORE_OVER_BUDGET,
    .bytes = P_STORE_BYTES,
    .chunks = P_STORE_CHUNKS,
    .positions = P_STORE_POSITIONS,
    .bytes_per_position = P_STORE_BYTES_PER_POSITION,
    .bad = P_STORE_BAD,
};

static void pool_flush(lc_stage *s, lc_stage_metrics *m)
{
    pool *p = s->priv;
    const pool_config *c = s->config;
    double busy, total;
    lc_load_flush(&p->ingest_meter, &busy, &total);
    lc_metrics_add_load(m, "ingestion", busy, total, 1);
    lc_mutex_lock(&p->mu);
    lc_metric_gauge(m, P_SOURCES, (int64_t)lc_deque_len(&p->win.sources));
    /* Whole sources are held, so the oldest may reach below the window:
     * the window itself holds at most chunk_pool_size of them. */
    uint64_t good = p->win.in_window - p->win.dropped_held;
    uint64_t in_window = good < c->chunk_pool_size ? good : c->chunk_pool_size;
    lc_metric_gauge_of(m, P_IN_WINDOW, (int64_t)in_window, (int64_t)c->chunk_pool_size);
    lc_metric_gauge(m, P_HELD, (int64_t)p->win.in_window);
    lc_metric_gauge(m, P_TOTAL, (int64_t)p->win.upper);
    lc_metric_gauge(m, P_INITIAL_DONE, p->initial_done);
    lc_metric_gauge(m, P_SINCE_ANCHOR, (int64_t)p->win.since_anchor);
    lc_chunk_store_flush(&p->store, m, &store_rows);
    lc_metric_text(m, P_ANCHOR, p->win.anchor);
    lc_metric_text(m, P_COUNT_FROM, p->win.count_from);
    lc_metric_text(m, P_NEWEST_KEY, p->win.newest_key);
    if (p->hanse.cfg)
        lc_hanse_flush(&p->hanse, m, P_HANSE);
    lc_mutex_unlock(&p->mu);
}

#define COUNT_AT(field) LC_METRIC_AT(pool, field)
#define GAUGE .kind = LC_METRIC_GAUGE
#define TEXT .kind = LC_METRIC_TEXT

/* The pool's row: the window, the count since the anchor; its loading
 * row: the chunk store (when it has a budget). */
#define BAD_REASON(r) {"bad_" #r, "chunks", .kind = LC_METRIC_BAD},
static const lc_metric_info pool_metrics[] = {
    [P_IN_WINDOW] = {"chunks_in_window", "chunks", LC_SHOW_FILL, 0, "in window",
                     .role = LC_ROLE_WINDOW_FILL, GAUGE},
    [P_SINCE_ANCHOR] = {"chunks_since_anchor", "chunks", LC_SHOW_SINCE_ANCHOR,
                        .role = LC_ROLE_ANCHOR_COUNT, GAUGE},
    [P_SOURCES] = {"chunk_sources", "sources", LC_SHOW_VALUE, LC_SHOW_DIM, "sources", "src", GAUGE},
    [P_RESHUFFLES] = {"reshuffles", "passes", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
                      "passes", "", COUNT_AT(n_reshuffles)},
    [P_STORE_BYTES] = {"store_bytes", "bytes", LC_SHOW_FILL, 0, "in store", .row = "loading",
                       GAUGE},
    [P_STORE_HITS] = {"store_hits", "chunks", LC_SHOW_PERCENT, 0, "hits", .of = "store_misses",
                      .row = "loading"},
    [P_STORE_TRANSCODES] = {"store_transcodes", "chunks", LC_SHOW_RATE, LC_SHOW_NONZERO, "packed/s",
                            "/s", .row = "loading"},
    [P_STORE_BYTES_PER_POSITION] = {"store_bytes_per_position", "bytes/position", LC_SHOW_VALUE,
                                    LC_SHOW_DIM | LC_SHOW_NONZERO, "B/position", "",
                                    .row = "loading", GAUGE},
    [P_ANCHOR] = {"anchor", "", .role = LC_ROLE_ANCHOR, TEXT},
    [P_COUNT_FROM] = {"count_from", "", .role = LC_ROLE_ANCHOR_FROM, TEXT},
    [P_NEWEST_KEY] = {"last_chunk_key", "", .role = LC_ROLE_NEWEST_KEY, TEXT},
    [P_EMITTED] = {"chunks_emitted", "chunks", COUNT_AT(n_emitted)},
    [P_HANSE] = LC_HANSE_METRIC_ROWS[P_DROPPED] = {"dropped_chunks", "chunks",
                                                   .kind = LC_METRIC_DROP, COUNT_AT(n_dropped)},
    /* Chunks that could not be read or inflated: bad input, for the BAD
     * column (those that fail the checks count as bad_<reason>). */
    [P_UNREADABLE] = {"bad_unreadable_chunks", "chunks", .kind = LC_METRIC_BAD,
                      COUNT_AT(n_unreadable)},
    [P_SOURCES_ADDED] = {"sources_added", "sources", COUNT_AT(n_sources_added)},
    [P_REWRITTEN_SAME] = {"rewritten_same", "sources", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
                          "files written again, same", "same again", COUNT_AT(n_rewritten_same)},
    [P_REWRITTEN_REPLACED] = {"rewritten_replaced", "sources", LC_SHOW_TOTAL,
                              LC_SHOW_DIM | LC_SHOW_NONZERO, "files replaced", "replaced",
                              COUNT_AT(n_rewritten_replaced)},
    [P_EVICTED] = {"sources_evicted", "sources", COUNT_AT(n_evicted)},
    [P_NOT_KEPT] = {"sources_not_kept", "sources", COUNT_AT(n_not_kept)},
    [P_STALE_DRAWS] = {"stale_draws", "draws", COUNT_AT(n_stale_draws)},
    [P_OTHER_RANK] = {"other_rank_chunks", "chunks", COUNT_AT(n_other_rank)},
    [P_FRESH_DRAWS] = {"fresh_draws", "chunks", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO,
                       "drawn fresh", "fresh", COUNT_AT(n_fresh_drawn)},
    [P_HELD] = {"chunks_held", "chunks", GAUGE},
    [P_TOTAL] = {"chunks_total", "chunks", GAUGE},
    [P_INITIAL_DONE] = {"initial_load_done", "", GAUGE},
    [P_STORE_MISSES] = {"store_misses", "chunks"},
    [P_STORE_OVER_BUDGET] = {"store_over_budget", "chunks"},
    [P_STORE_CHUNKS] = {"store_chunks", "chunks", GAUGE},
    [P_STORE_POSITIONS] = {"store_positions", "positions", GAUGE},
    [P_STORE_BAD] =
        LC_RECORD_CHECK_REASON_LIST(BAD_REASON){"bad_other", "chunks", .kind = LC_METRIC_BAD},
    {0},
};
#undef BAD_REASON
#undef COUNT_AT
#undef GAUGE
#undef TEXT

/* anchor-recount KEY (mu held): the anchor moves to KEY and the count is
 * made again from the window (lc_chunk_pool_recount_locked); before the
 * initial load, the key is set and the load's end counts from it. One
 * rank's window lacks the other ranks' games: refused with sharding. */
static int pool_recount(lc_stage *s, const char *key, uint64_t *count, lc_error *err)
{
    pool *p = s->priv;
    if (s->env->world_size > 1)
        return lc_error_set(err, -ENOTSUP,
                            "anchor-recount: this rank's window holds its share of the games only "
                            "(world size %u), so it cannot count the others': give the anchor "
                            "before the start instead (lcmon --anchor KEY, lcmon.Loader(config, "
                            "anchor=KEY) or the pool's anchor:)",
                            s->env->world_size);
    if (!p->initial_done) {
        lc_chunk_window_set_anchor(&p->win, key);
        p->recount_due = true;
        *count = p->win.since_anchor;
        LC_INFO("%s: anchor set to '%s' before the initial load, which counts from it", s->name,
                key);
        return 0;
    }
    bool held;
    *count = lc_chunk_pool_recount_locked(s, key, &held);
    LC_INFO("%s: anchor recounted from '%s': %llu chunks of the window come after it%s", s->name,
            key, (unsigned long long)*count,
            held ? "" : " (its game is not in the window: only the window's games are counted)");
    return 0;
}

/* Whether a source of the window has key (or a bare name of it); mu held. */
static bool window_has_key(lc_chunk_window *w, const char *key)
{
    for (size_t i = 0; i < lc_deque_len(&w->sources); i++)
        if (lc_source_key_matches(lc_chunk_source_key(lc_chunk_window_at(w, i)->src), key))
            return true;
    return false;
}

/* anchor-set to a key no game of the window has (after the initial load):
 * set all the same, as upstream's, but said, with a key as it looks. */
static void warn_unknown_anchor(lc_stage *s, const char *key, uint64_t count, lc_reply *reply)
{
    pool *p = s->priv;
    char why[600];
    snprintf(why, sizeof why,
             "no game in the window has the key '%s' (misspelt? keys are paths relative to the "
             "data folder, as last_chunk_key shows: '%s'): set all the same; the count stays "
             "%llu",
             key, p->win.newest_key ? p->win.newest_key : "", (unsigned long long)count);
    LC_WARN("%s: anchor-set: %s", s->name, why);
    lc_reply_add(reply, "warning", "%s", why);
}

/* anchor-get, anchor-set KEY, anchor-recount KEY and anchor-reset: each
 * answers with the anchor and the chunks counted since it (a reset: before
 * it; a recount: since KEY). */
static int pool_anchor(lc_stage *s, const lc_command_request *req, lc_reply *reply, lc_error *err)
{
    pool *p = s->priv;
    bool reset = strcmp(req->name, "anchor-reset") == 0;
    const char *set = strcmp(req->name, "anchor-set") == 0 ? req->argv[0] : NULL;
    const char *recount = strcmp(req->name, "anchor-recount") == 0 ? req->argv[0] : NULL;
    lc_mutex_lock(&p->mu);
    /* Not before the initial load is counted (a reset then would leave its
     * games to be counted after it, as new), nor with no game at all (an
     * empty anchor: every game would be new). */
    if (reset && (!p->initial_done || !p->win.newest_key)) {
        bool loading = !p->initial_done;
        lc_mutex_unlock(&p->mu);
        return lc_error_set(err, -EAGAIN,
                            "anchor reset: no game is loaded yet (%s), so there is nothing to "
                            "anchor at: try again once %s, or set an anchor by name",
                            loading ? "the initial load is under way" : "none has arrived",
                            loading ? "the pool has loaded" : "a game has arrived");
    }
    uint64_t count = p->win.since_anchor;
    if (recount && pool_recount(s, recount, &count, err) != 0) {
        lc_mutex_unlock(&p->mu);
        return err->code;
    }
    if (set && p->initial_done && !window_has_key(&p->win, set))
        warn_unknown_anchor(s, set, count, reply);
    if (set)
        lc_chunk_window_set_anchor(&p->win, set);
    else if (reset)
        lc_chunk_window_reset_anchor(&p->win);
    p->anchor_moved |= set || reset || recount;
    if (set || reset) /* "set to K (count stays N)", "reset to K after N chunks" */
        LC_INFO("%s: anchor %s to '%s' %s%llu%s", s->name, set ? "set" : "reset", p->win.anchor,
                set ? "(count stays " : "after ", (unsigned long long)count, set ? ")" : " chunks");
    lc_reply_add(reply, "anchor", "%s", p->win.anchor ? p->win.anchor : "");
    lc_reply_add(reply, "count", "%llu", (unsigned long long)count);
    lc_mutex_unlock(&p->mu);
    return 0;
}

/* fresh: the games that arrived since the last request are drawn next,
 * and what the queues below hold is dropped (under mu, so that no draw
 * comes between), so that the trainer's next batches are made from now on,
 * with a position of each of those games in the first of them. Without a
 * new game nothing is dropped. */
static int pool_fresh(lc_stage *s, const lc_command_request *req, lc_reply *reply, lc_error *err)
{
    (void)req;
    pool *p = s->priv;
    lc_mutex_lock(&p->mu);
    if (!p->initial_done) {
        lc_mutex_unlock(&p->mu);
        return lc_error_set(err, -EAGAIN,
                            "fresh: the initial load is under way: try again once the pool has "
                            "loaded");
    }
    uint64_t first = 0, last = 0;
    uint64_t games = lc_chunk_window_fresh(&p->win, &first, &last);
    uint64_t next = p->win.n_fresh;
    /* No new game: nothing to hurry, and what an earlier request brought
     * may still be on its way down. */
    uint64_t dropped =
        games && s->env->drain_below ? s->env->drain_below(s->env->drain_below_ctx, s) : 0;
    lc_mutex_unlock(&p->mu);
    LC_INFO("%s: fresh: %llu new games drawn next (%llu in all), %llu queued items below dropped",
            s->name, (unsigned long long)games, (unsigned long long)next,
            (unsigned long long)dropped);
    lc_reply_add(reply, "games", "%llu", (unsigned long long)games);
    lc_reply_add(reply, "first_seq", "%llu", (unsigned long long)(games ? first + 1 : 0));
    lc_reply_add(reply, "last_seq", "%llu", (unsigned long long)(games ? last + 1 : 0));
    lc_reply_add(reply, "dropped", "%llu", (unsigned long long)dropped);
    return 0;
}

static const lc_stage_command pool_commands[] = {
    {{"anchor-get", "", 0, 0, "print the anchor and the chunks counted since it"}, pool_anchor},
    {{"anchor-set", "KEY", 1, 1, "set the anchor (the count is kept, as upstream's)"}, pool_anchor},
    {{"anchor-recount", "KEY", 1, 1,
      "set the anchor and count again: the window's chunks\nafter KEY (exact when KEY's game is "
      "in the window)"},
     pool_anchor},
    {{"anchor-reset", "", 0, 0,
      "anchor at the newest chunk; print the new anchor\nand the number of chunks counted "
      "before the reset"},
     pool_anchor},
    {{"fresh", "", 0, 0,
      "draw the games that arrived since the last fresh first, and drop what the\nqueues "
      "below hold (none new: nothing): the next batches hold them; print how\nmany, their "
      "sequence numbers and the items dropped"},
     pool_fresh},
    {{0}},
};

/* Across a restart an anchor moved at run time is kept (the count starts
 * again): it is what the trainer counts from. One the configuration gave is
 * not carried: the new pipeline takes its configuration's, which a reload
 * may have changed. No anchor ("") stays no anchor: nothing to carry. */
static char *pool_carry_out(lc_stage *s)
{
    pool *p = s->priv;
    lc_mutex_lock(&p->mu);
    char *a =
        p->anchor_moved && p->win.anchor && p->win.anchor[0] ? lc_xstrdup(p->win.anchor) : NULL;
    lc_mutex_unlock(&p->mu);
    return a;
}

static int pool_carry_in(lc_stage *s, const char *carried, lc_error *err)
{
    (void)err;
    pool *p = s->priv;
    const pool_config *c = s->config;
    lc_mutex_lock(&p->mu);
    lc_chunk_window_set_anchor(&p->win, carried);
    p->anchor_moved = true;
    lc_mutex_unlock(&p->mu);
    if (c->anchor && c->anchor[0] && strcmp(c->anchor, carried) != 0)
        LC_INFO("%s: the anchor '%s' set at run time is kept across the restart, over the "
                "configuration's '%s'",
                s->name, carried, c->anchor);
    else
        LC_INFO("%s: the anchor '%s' is kept across the restart", s->name, carried);
    return 0;
}

static unsigned pool_threads(const void *config)
{
    return ((const pool_config *)config)->threads;
}

const lc_stage_class lc_shuffling_chunk_pool_class = {
    .type_name = "shuffling_chunk_pool",
    .summary = "keeps a shuffled window of the newest chunks; anchors count new games",
    .flags = LC_STAGE_MIXES,
    .input = &lc_item_source,
    .output = &lc_item_chunk,
    .decouples = true, /* sources go into the window whatever is drawn */
    .priv_size = sizeof(pool),
    .worker = loader_worker,
    .threads = pool_threads,
    .workers = "loading",
    .settings = {pool_settings, sizeof(pool_config)},
    .config_check = pool_config_check,
    .init = pool_init,
    .fini = pool_fini,
    .start = pool_start,
    .stop = pool_stop,
    .flush_metrics = pool_flush,
    .metrics = pool_metrics,
    .commands = pool_commands,
    .carry_out = pool_carry_out,
    .carry_in = pool_carry_in,
};
