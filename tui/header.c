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

void tui_header_draw(const tui_screen *s, WINDOW *w)
{
    const Lcmon__DataLoaderMetricsProto *m = s->last;
    const tui_glyphs *g = tui_glyph();
    int cols = getmaxx(w);
    werase(w);
    tui_fill(w, 0, 0, cols, TUI_HEADER, " ");

    /* The parts. */
    Lcmon__PipelineState st = m->state;
    char state[24];
    snprintf(state, sizeof state, " %s ",
             s->disconnected ? "disconnected"
                             : (s->stopping ? "stopping" : lc_pipeline_state_name(st)));
    for (char *p = state; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    tui_elem st_elem =
        s->disconnected ? TUI_STATE_FAILED : (s->stopping ? TUI_STATE_BUSY : state_elem(st));

    char up[32], rank[40], pos[40];
    char clock[24];
    tui_fmt_clock(clock, sizeof clock, m->uptime_seconds);
    snprintf(up, sizeof up, "%s", clock);
    snprintf(rank, sizeof rank, "%u/%u", m->rank, m->world_size ? m->world_size : 1);
    double pps = lc_status_positions_per_second(m);
    char num[16];
    tui_fmt_count(num, sizeof num, pps < 0 ? 0 : pps);
    snprintf(pos, sizeof pos, "%s", num);

    const Lcmon__StageMetricProto *writer = tui_find_writer(m);
    const char *path = writer && writer->detail ? writer->detail : NULL;
    const char *reader = NULL;
    bool reader_warn = false;
    /* A stopped, finished, failed or lost pipeline has no rate and no
     * reader: its last numbers would be stale. */
    bool live = !s->disconnected && lc_pipeline_state_live(st);
    if (writer && live) {
        const Lcmon__GaugeMetricProto *conn = lc_proto_find_gauge(writer, "reader_connected");
        const Lcmon__GaugeMetricProto *wait = lc_proto_find_gauge(writer, "waiting_for_reader");
        if (conn && conn->value)
            reader = "reader connected";
        else if (wait && wait->value) {
            reader = "waiting for a reader";
            reader_warn = true;
        } else {
            reader = "no reader";
        }
    }
    char errs[200] = "";
    size_t n_err = tui_logpane_errors(s->log);
    size_t n_warn = tui_logpane_warnings(s->log);
    const Lcmon__StageMetricProto *warned = NULL;
    for (size_t i = 0; i < m->n_stage_metrics && !warned; i++)
        if (m->stage_metrics[i]->warning && m->stage_metrics[i]->warning[0])
            warned = m->stage_metrics[i];
    if (warned) /* a stage in a warning state says so first */
        snprintf(errs, sizeof errs, "%s: %s", warned->name, warned->warning);
    if (warned && warned == writer)
        reader = NULL;           /* the warning says it, and what to run */
    else if (n_err && !s->log_h) /* hidden by l, or no room for the pane */
        snprintf(errs, sizeof errs, "%zu error%s in the log", n_err, n_err == 1 ? "" : "s");
    else if (n_warn && !s->log_h)
        snprintf(errs, sizeof errs, "%zu warning%s in the log", n_warn, n_warn == 1 ? "" : "s");
    const char *where = lc_monitor_where(s->mon);

    /* Widths, and what to leave out. */
    int w_title = 7, w_state = tui_text_width(state);
    int w_up = 5 + tui_text_width(up);       /* "  up " */
    int w_rank = 7 + tui_text_width(rank);   /* "  rank " */
    int w_pos = 2 + tui_text_width(pos) + 6; /* "  " " pos/s" */
    int arrow = tui_text_width(g->arrow_right) + 1;
    int w_path_full = path ? 2 + arrow + tui_text_width(path) : 0;
    int w_reader = reader ? 2 + tui_text_width(reader) : 0;
    int w_errs = errs[0] ? 2 + tui_text_width(errs) : 0;
    int w_where = where ? 2 + tui_text_width(where) + 1 : 0;
    bool show_up = true, show_rank = true, show_where = true, show_pos = live && pps >= 0;
    int w_path = w_path_full;
    for (;;) {
        int total = w_title + w_state + (show_up ? w_up : 0) + (show_rank ? w_rank : 0) +
                    (show_pos ? w_pos : 0) + w_path + w_reader + w_errs +
                    (show_where ? w_where : 0);
        if (total <= cols)
            break;
        int over = total - cols;
        if (warned && warned == writer && path && w_path) {
            w_path = 0; /* the writer's warning names the pipe */
        } else if (warned && w_errs > 2 + 40) {
            /* A long warning is cut (its stage's row has it too) before the
             * socket an attached screen shows goes. */
            w_errs = w_errs - over > 2 + 40 ? w_errs - over : 2 + 40;
        } else if (show_where && where) {
            show_where = false;
        } else if (show_rank && m->world_size <= 1) {
            show_rank = false;
        } else if (path && w_path > 2 + arrow + 12) {
            w_path = w_path - over < 2 + arrow + 12 ? 2 + arrow + 12 : w_path - over;
        } else if (show_up) {
            show_up = false;
        } else if (show_rank) {
            show_rank = false;
        } else if (warned && path && w_path) { /* a warning matters more than the path */
            w_path = 0;
        } else if (w_errs) {
            w_errs = 0;
        } else if (path && w_path) {
            w_path = 0;
        } else {
            break;
        }
    }

    /* Draw. */
    int x = 0;
    x += tui_put(w, 0, x, cols - x, TUI_HEADER_TITLE, " lcmon ");
    x += tui_put(w, 0, x, cols - x, st_elem, state);
    if (show_up) {
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, "  up ");
        x += tui_put(w, 0, x, cols - x, TUI_HEADER_VALUE, up);
    }
    if (show_rank) {
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, "  rank ");
        x += tui_put(w, 0, x, cols - x, TUI_HEADER_VALUE, rank);
    }
    if (show_pos) {
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, "  ");
        x += tui_put(w, 0, x, cols - x, TUI_HEADER_VALUE, pos);
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, " pos/s");
    }
    if (path && w_path) {
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, "  ");
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, g->arrow_right);
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, " ");
        int pw = w_path - 2 - arrow;
        put_tail(w, 0, x, pw < cols - x ? pw : cols - x, TUI_HEADER_VALUE, path);
        x += pw;
    }
    if (reader) {
        x += tui_put(w, 0, x, cols - x, TUI_HEADER, "  ");
        x += tui_put(w, 0, x, cols - x, reader_warn ? TUI_HEADER_WARN : TUI_HEADER, reader);
    }
    int right = cols;
    if (show_where && where) {
        right -= tui_text_width(where) + 1;
        tui_put(w, 0, right, cols - right, TUI_HEADER, where);
    }
    if (w_errs) {
        right -= w_errs;
        if (right > x)
            tui_put_cut(w, 0, right, w_errs - 2, TUI_HEADER_WARN, errs);
    }

    /* The error, wrapped, under the header. */
    const char *err = error_text(s);
    int lines = getmaxy(w) - 1;
    if (err && lines > 0) {
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
}
