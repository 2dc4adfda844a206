#include "stages/items.h"

#include "core/cells.h"
#include "core/clock.h"
#include "format/batch.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/frame.h"
#include "format/lc0/packed_chunk.h"

#include <pthread.h>
#include <stdlib.h>

static void dispose_path(void *p)
{
    free(((lc_path_item *)p)->path);
}

static void dispose_source(void *p)
{
    lc_chunk_source_unref(((lc_source_item *)p)->source);
}

const lc_item_type lc_item_path = {"path", sizeof(lc_path_item), dispose_path, "paths"};
const lc_item_type lc_item_source = {"chunk_source", sizeof(lc_source_item), dispose_source,
                                     "sources"};

static void dispose_chunk(void *p)
{
    lc_chunk_item *c = p;
    free(c->data);
    if (c->flags & LC_ITEM_OWN_PATCH)
        free((float *)c->patch);
    lc_packed_chunk_unref(c->packed);
    lc_chunk_source_unref(c->source);
}

_Static_assert(sizeof(lc_frame) == LC_FRAME_CELL_BYTES, "LC_FRAME_CELL_BYTES is a frame's size");

static lc_cells *frame_cells;
static pthread_once_t frame_cells_once = PTHREAD_ONCE_INIT;

static void frame_cells_init(void)
{
    frame_cells = lc_cells_new("frames", sizeof(lc_frame));
}

lc_frame *lc_frame_cell_new(void)
{
    pthread_once(&frame_cells_once, frame_cells_init);
    lc_frame *f = lc_cells_alloc(frame_cells);
    f->overflow_idx = NULL;
    f->overflow_val = NULL;
    return f;
}

void lc_frame_cell_free(lc_frame *f)
{
    if (!f)
        return;
    lc_frame_fini(f);
    lc_cells_free(frame_cells, f);
}

lc_frame *lc_frame_cell_dup(const lc_frame *f)
{
    lc_frame *d = lc_frame_cell_new();
    lc_frame_copy(d, f);
    return d;
}

void lc_frame_cells_stats(lc_cells_stats *out)
{
    pthread_once(&frame_cells_once, frame_cells_init);
    lc_cells_stats_get(frame_cells, out);
}

static void dispose_frame(void *p)
{
    lc_frame_cell_free(*(lc_frame **)p);
}

static void dispose_batch(void *p)
{
    lc_batch_free(((lc_batch_item *)p)->batch);
}

const lc_item_type lc_item_chunk = {"chunk", sizeof(lc_chunk_item), dispose_chunk, "chunks"};
const lc_item_type lc_item_frame = {"frame", sizeof(lc_frame *), dispose_frame, "frames"};
void lc_batch_origin_freshness(const lc_batch_origin *o, lc_stream_freshness *out)
{
    *out = (lc_stream_freshness){0};
    if (!o->rows_known)
        return;
    uint32_t now = (uint32_t)(lc_now_ns() / 1000000u); /* mod 2^32, as the stamps */
    *out = (lc_stream_freshness){
        .newest_seq = o->newest_seq,
        .fresh_rows = o->fresh_rows,
        .age_min_ms = now - o->arrived_newest_ms,
        .age_median_ms = now - o->arrived_median_ms,
        .age_max_ms = now - o->arrived_oldest_ms,
    };
}

const lc_item_type lc_item_batch = {"batch", sizeof(lc_batch_item), dispose_batch, "batches"};

static void dispose_game(void *p)
{
    free(((lc_game_item *)p)->mem);
}

const lc_item_type lc_item_game = {"game", sizeof(lc_game_item), dispose_game, "games"};

const lc_item_type lc_item_any = {"any", 0, NULL, "items"};
