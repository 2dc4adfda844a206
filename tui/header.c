/*
 * header: the first line, and the pipeline's error under it when it failed.
 *
 *    lcmon  RUNNING  up 1:23  rank 0/1  38.5k pos/s  → lcmon.pipe  reader connected   in-process
 *
 * When the line is too narrow the parts that matter least go first: where
 * the loader runs, the rank, then the output path shrinks from the left
 * (its end names the pipe), then the uptime. The state is always there,
 * in words.
 */
#include "tui/screen.h"

#include "monitor/snapshot.h"
#include "tui/derive.h"
#include "tui/widgets.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *error_text(const tui_screen *s)
{
    if (s->last->state != LCMON__PIPELINE_STATE__PIPELINE_FAILED)
        return NULL;
    return s->last->error && s->last->error[0] ? s->last->error
                                               : "the pipeline failed (the log says why)";
}

int tui_header_lines(const tui_screen *s, int cols)
{
    const char *err = error_text(s);
    if (!err)
        return 1;
    int lines = 0;
    int width = cols - 2 - 7; /* margin and "error: " */
    if (width < 10)
        return 2;
    while (*err && lines < TUI_ERROR_LINES_MAX) {
        size_t adv;
        tui_text_wrap(err, width, &adv);
        err += adv ? adv : strlen(err);
        lines++;
    }
    return 1 + lines;
}

static tui_elem state_elem(Lcmon__PipelineState st)
{
    switch (st) {
    case LCMON__PIPELINE_STATE__PIPELINE_RUNNING:
        return TUI_STATE_RUNNING;
    case LCMON__PIPELINE_STATE__PIPELINE_FAILED:
        return TUI_STATE_FAILED;
    case LCMON__PIPELINE_STATE__PIPELINE_STOPPED:
    case LCMON__PIPELINE_STATE__PIPELINE_FINISHED:
        return TUI_STATE_IDLE;
    default:
        return TUI_STATE_BUSY;
    }
}

/* Draw s in width columns, cutting from the left so that its end shows. */
static void put_tail(WINDOW *w, int y, int x, int width, tui_elem e, const char *s)
{
    int tw = tui_text_width(s);
    if (tw <= width) {
        tui_put(w, y, x, width, e, s);
        return;
    }
    const char *ell = tui_glyph()->ellipsis;
    int ew = tui_text_width(ell);
    while (*s && tui_text_width(s) > width - ew) {
        s++;
        while (((unsigned char)*s & 0xc0) == 0x80)
            s++;
    }
    tui_put(w, y, x, ew, e, ell);
    tui_put(w, y, x + ew, width - ew, e, s);
}

/* What the first line says, before it is fitted to the width. */
typedef struct header_parts {
    char state[24];
    tui_elem st_elem;
    char up[32], rank[40], pos[40];
    const char *path;   /* the writer's pipe, or NULL */
    const char *reader; /* "reader connected", ..., or NULL */
    bool reader_warn;
    char errs[200];     /* a stage's warning, or the log's counts; "" */
    bool warned;        /* errs is a stage's warning */
    bool writer_warned; /* ... the writer's, which names the pipe */
    const char *where;
    bool live; /* a rate and a reader mean something */
    double pps;
    unsigned world;
} header_parts;

/* How much of it fits: the widths the fit leaves (0: left out). */
typedef struct header_fit {
    int w_path, w_errs;
    bool show_up, show_rank, show_where, show_pos;
} header_fit;

static void header_reader(const Lcmon__StageMetricProto *writer, header_parts *h)
{
    h->reader = NULL;
    if (!writer || !h->live)
        return;
    const Lcmon__GaugeMetricProto *conn =
        lc_snapshot_gauge_of_role(writer, LCMON__METRIC_ROLE__ROLE_READER_CONNECTED);
    const Lcmon__GaugeMetricProto *wait =
        lc_snapshot_gauge_of_role(writer, LCMON__METRIC_ROLE__ROLE_READER_WAITING);
    if (conn && conn->value) {
        h->reader = "reader connected";
    } else if (wait && wait->value) {
        h->reader = "waiting for a reader";
        h->reader_warn = true;
    } else {
        h->reader = "no reader";
    }
}

static void header_parts_of(const tui_screen *s, header_parts *h)
{
    const Lcmon__DataLoaderMetricsProto *m = s->last;
    *h = (header_parts){0};
    Lcmon__PipelineState st = m->state;
    snprintf(h->state, sizeof h->state, " %s ",
             s->disconnected ? "disconnected"
                             : (s->stopping ? "stopping" : lc_pipeline_state_name(st)));
    for (char *p = h->state; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    h->st_elem =
        s->disconnected ? TUI_STATE_FAILED : (s->stopping ? TUI_STATE_BUSY : state_elem(st));
    char clock[24];
    tui_fmt_clock(clock, sizeof clock, m->uptime_seconds);
    snprintf(h->up, sizeof h->up, "%s", clock);
    h->world = m->world_size ? m->world_size : 1;
    snprintf(h->rank, sizeof h->rank, "%u/%u", m->rank, h->world);
    h->pps = lc_status_positions_per_second(m);
    char num[16];
    tui_fmt_count(num, sizeof num, h->pps < 0 ? 0 : h->pps);
    snprintf(h->pos, sizeof h->pos, "%s", num);

    const Lcmon__StageMetricProto *writer = tui_find_writer(m);
    h->path = writer && writer->detail ? writer->detail : NULL;
    /* A stopped, finished, failed or lost pipeline has no rate and no
     * reader: its last numbers would be stale. */
    h->live = !s->disconnected && lc_pipeline_state_live(st);
    header_reader(writer, h);

    size_t n_err = tui_logpane_errors(s->log);
    size_t n_warn = tui_logpane_warnings(s->log);
    const Lcmon__StageMetricProto *warned = NULL;
    for (size_t i = 0; i < m->n_stage_metrics && !warned; i++)
        if (m->stage_metrics[i]->warning && m->stage_metrics[i]->warning[0])
            warned = m->stage_metrics[i];
    if (warned) /* a stage in a warning state says so first */
        snprintf(h->errs, sizeof h->errs, "%s: %s", warned->name, warned->warning);
    h->warned = warned != NULL;
    h->writer_warned = warned && warned == writer;
    if (h->writer_warned)
        h->reader = NULL;        /* the warning says it, and what to run */
    else if (n_err && !s->log_h) /* hidden by l, or no room for the pane */
        snprintf(h->errs, sizeof h->errs, "%zu error%s in the log", n_err, n_err == 1 ? "" : "s");
    else if (n_warn && !s->log_h)
        snprintf(h->errs, sizeof h->errs, "%zu warning%s in the log", n_warn,
                 n_warn == 1 ? "" : "s");
    h->where = lc_monitor_where(s->mon);
}

/* When the line is too narrow, what matters least goes first. */
static header_fit header_fit_to(const header_parts *h, int cols)
{
    int arrow = tui_text_width(tui_glyph()->arrow_right) + 1;
    int w_title = 7, w_state = tui_text_width(h->state);
    int w_up = 5 + tui_text_width(h->up);       /* "  up " */
    int w_rank = 7 + tui_text_width(h->rank);   /* "  rank " */
    int w_pos = 2 + tui_text_width(h->pos) + 6; /* "  " " pos/s" */
    int w_reader = h->reader ? 2 + tui_text_width(h->reader) : 0;
    int w_where = h->where ? 2 + tui_text_width(h->where) + 1 : 0;
    header_fit f = {
        .w_path = h->path ? 2 + arrow + tui_text_width(h->path) : 0,
        .w_errs = h->errs[0] ? 2 + tui_text_width(h->errs) : 0,
        .show_up = true,
        .show_rank = true,
        .show_where = true,
        .show_pos = h->live && h->pps >= 0,
    };
    for (;;) {
        int total = w_title + w_state + (f.show_up ? w_up : 0) + (f.show_rank ? w_rank : 0) +
                    (f.show_pos ? w_pos : 0) + f.w_path + w_reader + f.w_errs +
                    (f.show_where ? w_where : 0);
        if (total <= cols)
            break;
        int over = total - cols;
        if (h->writer_warned && h->path && f.w_path) {
            f.w_path = 0; /* the writer's warning names the pipe */
        } else if (h->warned && f.w_errs > 2 + 40) {
            /* A long warning is cut (its stage's row has it too) before the
             * socket an attached screen shows goes. */
            f.w_errs = f.w_errs - over > 2 + 40 ? f.w_errs - over : 2 + 40;
        } else if (f.show_where && h->where) {
            f.show_where = false;
        } else if (f.show_rank && h->world <= 1) {
            f.show_rank = false;
        } else if (h->path && f.w_path > 2 + arrow + 12) {
            f.w_path = f.w_path - over < 2 + arrow + 12 ? 2 + arrow + 12 : f.w_path - over;
        } else if (f.show_up) {
            f.show_up = false;
        } else if (f.show_rank) {
            f.show_rank = false;
        } else if (h->warned && h->path && f.w_path) { /* a warning matters more than the path */
            f.w_path = 0;
        } else if (f.w_errs) {
            f.w_errs = 0;
        } else if (h->path && f.w_path) {
            f.w_path = 0;
        } else {
            break;
        }
    }
    return f;
}

static void header_line_draw(const header_parts *h, const header_fit *f, WINDOW *w, int cols)
{
    const tui_glyphs *g = tui_glyph();
    int arrow = tui_text_width(g->arrow_right) + 1;
    int x = 0;
    x += tui_put(w, 0, x, cols - x, TUI_HEADER_TITLE, " lcmon ");
    x += tui_put(w, 0, x, cols - x, h->st_elem, h->state);
    if (f->show_up) {
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, "  up ");
        x += tui_put(w, 0, x, cols - x, TUI_HEADER_VALUE, h->up);
    }
    if (f->show_rank) {
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, "  rank ");
        x += tui_put(w, 0, x, cols - x, TUI_HEADER_VALUE, h->rank);
    }
    if (f->show_pos) {
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, "  ");
        x += tui_put(w, 0, x, cols - x, TUI_HEADER_VALUE, h->pos);
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, " pos/s");
    }
    if (h->path && f->w_path) {
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, "  ");
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, g->arrow_right);
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, " ");
        int pw = f->w_path - 2 - arrow;
        put_tail(w, 0, x, pw < cols - x ? pw : cols - x, TUI_HEADER_VALUE, h->path);
        x += pw;
    }
    if (h->reader) {
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, "  ");
        x += tui_put(w, 0, x, cols - x, h->reader_warn ? TUI_HEADER_WARN : TUI_HEADER, h->reader);
    }
    int right = cols;
    if (f->show_where && h->where) {
        right -= tui_text_width(h->where) + 1;
        tui_put(w, 0, right, cols - right, TUI_HEADER, h->where);
    }
    if (f->w_errs) {
        right -= f->w_errs;
        if (right > x)
            tui_put_cut(w, 0, right, f->w_errs - 2, TUI_HEADER_WARN, h->errs);
    }
}

/* The pipeline's error, wrapped, under the header. */
static void header_error_draw(const tui_screen *s, WINDOW *w, int cols)
{
    const char *err = error_text(s);
    int lines = getmaxy(w) - 1;
    if (!err || lines <= 0)
        return;
    int width = cols - 2 - 7;
    for (int i = 0; i < lines && *err; i++) {
        if (i == 0)
            tui_put(w, 1, 1, 7, TUI_STATE_FAILED, "error:");
        size_t adv = strlen(err), n = adv;
        if (width >= 10 && i < lines - 1)
            n = tui_text_wrap(err, width, &adv);
        /* The last line takes the rest, cut with an ellipsis. */
        char piece[LC_ERROR_MSG_MAX];
        snprintf(piece, sizeof piece, "%.*s", (int)n, err);
        err += adv ? adv : strlen(err);
        tui_put(w, 1 + i, 1 + 7 + 1, width, TUI_ERROR_TEXT, piece);
    }
}

void tui_header_draw(const tui_screen *s, WINDOW *w)
{
    int cols = getmaxx(w);
    werase(w);
    tui_fill(w, 0, 0, cols, TUI_HEADER, " ");
    header_parts h;
    header_parts_of(s, &h);
    header_fit f = header_fit_to(&h, cols);
    header_line_draw(&h, &f, w, cols);
    header_error_draw(s, w, cols);
}
