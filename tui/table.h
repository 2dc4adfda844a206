/*
 * table: the stage table (table.c), drawn from a view (view.h). Not a
 * public interface: the screen lays it out and draws it. UI thread only.
 */
#ifndef LC_TUI_TABLE_H
#define LC_TUI_TABLE_H

#include "tui/crt.h"
#include "tui/view.h"

#include <stdbool.h>

/* Rows the table needs for m: headings plus stage rows (and queue rows). */
int tui_table_rows(const Lcmon__DataLoaderMetricsProto *m, bool queues);
/* Draw the table into w; moves v->table_top to keep the selection shown. */
void tui_table_draw(tui_view *v, WINDOW *w);

#endif
