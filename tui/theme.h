/*
 * theme: semantic screen elements and the table that maps each
 * (theme, element) pair to colours and attributes.
 *
 * Widgets never name a colour: they draw "a stage name", "a hot load bar",
 * "an error log line", and the theme decides what that looks like. A theme
 * is one row of constant data, so adding a theme is adding a table. The
 * monochrome theme uses attributes only (bold, reverse, dim, underline) and
 * asks for distinct bar glyphs, so that no meaning depends on colour; words
 * (PAUSED, FULL, FAILED) carry state in every theme anyway.
 *
 * Colours are the 16 ANSI colours (0-7, and 8-15 for the bright variants;
 * crt maps a bright colour to its dark twin plus bold on 8-colour
 * terminals), or TUI_COLOR_DEFAULT for the terminal's own colour.
 *
 * Pure data; no curses calls here (crt turns entries into attributes).
 */
#ifndef LC_TUI_THEME_H
#define LC_TUI_THEME_H

#include <stdbool.h>
#include <stddef.h>

typedef enum tui_elem {
    TUI_NORMAL,        /* plain text and the background of every window */
    TUI_DIM,           /* zeros, units, things that matter less */
    TUI_HEADER,        /* the header line's background */
    TUI_HEADER_TITLE,  /* "lcmon" */
    TUI_HEADER_VALUE,  /* values on the header line */
    TUI_HEADER_WARN,   /* "waiting for a reader" */
    TUI_STATE_RUNNING, /* the pipeline state badge, by state */
    TUI_STATE_BUSY,    /* starting, stopping, paused */
    TUI_STATE_IDLE,    /* stopped, finished */
    TUI_STATE_FAILED,
    TUI_ERROR_TEXT, /* the pipeline error under the header */
    TUI_HEADING,    /* column headings */
    TUI_STAGE_NAME,
    TUI_STAGE_TYPE,
    TUI_SELECTED,       /* the selected stage's name cell */
    TUI_QUEUE_LABEL,    /* "↓ chunk" */
    TUI_VALUE,          /* numbers */
    TUI_WARN,           /* non-zero bad and drop counts, waits */
    TUI_PAUSED,         /* "PAUSED" */
    TUI_STAGE_STATE,    /* finished, stopped, idle */
    TUI_BAR_EMPTY,      /* the unfilled part of every bar */
    TUI_BAR_LOAD,       /* a thread pool's busy fraction, < 70% */
    TUI_BAR_LOAD_WARM,  /* 70% .. 90% */
    TUI_BAR_LOAD_HOT,   /* >= 90% */
    TUI_BAR_QUEUE,      /* queue fullness */
    TUI_BAR_QUEUE_FULL, /* a queue at capacity */
    TUI_BAR_FILL,       /* the pool's window, the reservoir */
    TUI_SPARK,          /* the throughput sparkline */
    TUI_SPARK_ZERO,     /* seconds with no throughput */
    TUI_LOG_TITLE,      /* the log pane's title rule */
    TUI_LOG_TIME,
    TUI_LOG_DEBUG,
    TUI_LOG_INFO,
    TUI_LOG_WARN,
    TUI_LOG_ERROR,
    TUI_LOG_SCREEN, /* what the screen itself reports (anchor reset ...) */
    TUI_MESSAGE,    /* the status message above the key bar */
    TUI_MESSAGE_ERROR,
    TUI_PROMPT,    /* the anchor prompt's input field */
    TUI_KEY,       /* a key in the key bar ("q") */
    TUI_KEY_LABEL, /* its label ("quit") */
    TUI_KEY_INFO,  /* theme and refresh rate at the key bar's end */
    TUI_HELP_TITLE,
    TUI_HELP_KEY,
    TUI_ELEM_COUNT
} tui_elem;

enum { TUI_COLOR_DEFAULT = -1 };

/* Attribute bits, independent of curses (crt translates them). */
enum {
    TUI_A_BOLD = 1 << 0,
    TUI_A_DIM = 1 << 1,
    TUI_A_REVERSE = 1 << 2,
    TUI_A_UNDERLINE = 1 << 3,
};

typedef struct tui_style {
    short fg, bg;   /* 0..15 or TUI_COLOR_DEFAULT */
    unsigned attrs; /* TUI_A_* */
} tui_style;

typedef struct tui_theme {
    const char *name;
    const char *summary;
    bool colour;        /* false: attributes only (monochrome) */
    bool distinct_bars; /* a different fill glyph per kind of bar */
    tui_style style[TUI_ELEM_COUNT];
} tui_theme;

/* NULL-terminated, in the order `t` cycles through them; [0] is the default. */
extern const tui_theme *const tui_themes[];

/* The theme of that name, or NULL. */
const tui_theme *tui_theme_find(const char *name);
/* The index of t in tui_themes. */
size_t tui_theme_index(const tui_theme *t);
/* "default, monochrome, light" (for usage messages). */
const char *tui_theme_list(void);

#endif
