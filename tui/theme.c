/*
 * theme: the (theme, element) -> style table. See theme.h.
 *
 * The colour themes keep to the 16 ANSI colours so they work on any colour
 * terminal and survive screen-sharing video compression: saturated bars on a
 * neutral background, red only for what is wrong.
 */
#include "tui/theme.h"

#include <stdio.h>
#include <string.h>

#define D TUI_COLOR_DEFAULT
/* clang-format off */
#define S(f, b, a) {.fg = (f), .bg = (b), .attrs = (a)}
/* clang-format on */

enum {
    BLACK = 0,
    RED = 1,
    GREEN = 2,
    YELLOW = 3,
    BLUE = 4,
    MAGENTA = 5,
    CYAN = 6,
    WHITE = 7,
    GREY = 8,
    BRIGHT_RED = 9,
    BRIGHT_GREEN = 10,
    BRIGHT_YELLOW = 11,
    BRIGHT_BLUE = 12,
    BRIGHT_CYAN = 14,
    BRIGHT_WHITE = 15,
};

enum { B = TUI_A_BOLD, DIM = TUI_A_DIM, REV = TUI_A_REVERSE, UL = TUI_A_UNDERLINE };

/* Light text on the terminal's own (dark) background. */
static const tui_theme theme_default = {
    .name = "default",
    .summary = "colours on the terminal's background",
    .colour = true,
    .style =
        {
            [TUI_NORMAL] = S(D, D, 0),
            [TUI_DIM] = S(GREY, D, 0),
            [TUI_HEADER] = S(BRIGHT_WHITE, BLUE, 0),
            [TUI_HEADER_TITLE] = S(BRIGHT_WHITE, BLUE, B),
            [TUI_HEADER_VALUE] = S(BRIGHT_WHITE, BLUE, B),
            [TUI_HEADER_WARN] = S(BRIGHT_YELLOW, BLUE, B),
            [TUI_STATE_RUNNING] = S(BLACK, GREEN, B),
            [TUI_STATE_BUSY] = S(BLACK, YELLOW, B),
            [TUI_STATE_IDLE] = S(BLACK, WHITE, B),
            [TUI_STATE_FAILED] = S(BRIGHT_WHITE, RED, B),
            [TUI_ERROR_TEXT] = S(BRIGHT_RED, D, B),
            [TUI_HEADING] = S(BLACK, GREEN, 0),
            [TUI_STAGE_NAME] = S(BRIGHT_WHITE, D, B),
            [TUI_STAGE_TYPE] = S(CYAN, D, 0),
            [TUI_SELECTED] = S(BLACK, CYAN, B),
            [TUI_QUEUE_LABEL] = S(GREY, D, 0),
            [TUI_VALUE] = S(D, D, 0),
            [TUI_WARN] = S(BRIGHT_YELLOW, D, B),
            [TUI_PAUSED] = S(BLACK, YELLOW, B),
            [TUI_STAGE_STATE] = S(CYAN, D, 0),
            [TUI_BAR_EMPTY] = S(GREY, D, 0),
            [TUI_BAR_LOAD] = S(GREEN, D, 0),
            [TUI_BAR_LOAD_WARM] = S(YELLOW, D, 0),
            [TUI_BAR_LOAD_HOT] = S(BRIGHT_RED, D, 0),
            [TUI_BAR_QUEUE] = S(CYAN, D, 0),
            [TUI_BAR_QUEUE_FULL] = S(BRIGHT_YELLOW, D, 0),
            [TUI_BAR_FILL] = S(BRIGHT_BLUE, D, 0),
            [TUI_SPARK] = S(GREEN, D, 0),
            [TUI_SPARK_ZERO] = S(GREY, D, 0),
            [TUI_LOG_TITLE] = S(CYAN, D, 0),
            [TUI_LOG_TIME] = S(GREY, D, 0),
            [TUI_LOG_DEBUG] = S(GREY, D, 0),
            [TUI_LOG_INFO] = S(D, D, 0),
            [TUI_LOG_WARN] = S(BRIGHT_YELLOW, D, 0),
            [TUI_LOG_ERROR] = S(BRIGHT_RED, D, B),
            [TUI_LOG_SCREEN] = S(BRIGHT_CYAN, D, 0),
            [TUI_MESSAGE] = S(BRIGHT_CYAN, D, B),
            [TUI_MESSAGE_ERROR] = S(BRIGHT_RED, D, B),
            [TUI_PROMPT] = S(BLACK, WHITE, 0),
            [TUI_KEY] = S(BRIGHT_WHITE, D, B),
            [TUI_KEY_LABEL] = S(BLACK, CYAN, 0),
            [TUI_KEY_INFO] = S(GREY, D, 0),
            [TUI_HELP_TITLE] = S(BRIGHT_WHITE, BLUE, B),
            [TUI_HELP_KEY] = S(BRIGHT_CYAN, D, B),
        },
};

/* Attributes only; bars differ by glyph, states by word. */
static const tui_theme theme_monochrome = {
    .name = "monochrome",
    .summary = "no colour: attributes, distinct bar glyphs and words",
    .colour = false,
    .distinct_bars = true,
    .style =
        {
            [TUI_NORMAL] = S(D, D, 0),
            [TUI_DIM] = S(D, D, DIM),
            [TUI_HEADER] = S(D, D, REV),
            [TUI_HEADER_TITLE] = S(D, D, REV | B),
            [TUI_HEADER_VALUE] = S(D, D, REV | B),
            [TUI_HEADER_WARN] = S(D, D, REV | B | UL),
            [TUI_STATE_RUNNING] = S(D, D, B),
            [TUI_STATE_BUSY] = S(D, D, B | UL),
            [TUI_STATE_IDLE] = S(D, D, B),
            [TUI_STATE_FAILED] = S(D, D, B | UL),
            [TUI_ERROR_TEXT] = S(D, D, B),
            [TUI_HEADING] = S(D, D, UL | B),
            [TUI_STAGE_NAME] = S(D, D, B),
            [TUI_STAGE_TYPE] = S(D, D, 0),
            [TUI_SELECTED] = S(D, D, REV | B),
            [TUI_QUEUE_LABEL] = S(D, D, DIM),
            [TUI_VALUE] = S(D, D, 0),
            [TUI_WARN] = S(D, D, B),
            [TUI_PAUSED] = S(D, D, REV | B),
            [TUI_STAGE_STATE] = S(D, D, 0),
            [TUI_BAR_EMPTY] = S(D, D, DIM),
            [TUI_BAR_LOAD] = S(D, D, 0),
            [TUI_BAR_LOAD_WARM] = S(D, D, 0),
            [TUI_BAR_LOAD_HOT] = S(D, D, B),
            [TUI_BAR_QUEUE] = S(D, D, 0),
            [TUI_BAR_QUEUE_FULL] = S(D, D, B),
            [TUI_BAR_FILL] = S(D, D, 0),
            [TUI_SPARK] = S(D, D, 0),
            [TUI_SPARK_ZERO] = S(D, D, DIM),
            [TUI_LOG_TITLE] = S(D, D, B),
            [TUI_LOG_TIME] = S(D, D, DIM),
            [TUI_LOG_DEBUG] = S(D, D, DIM),
            [TUI_LOG_INFO] = S(D, D, 0),
            [TUI_LOG_WARN] = S(D, D, B),
            [TUI_LOG_ERROR] = S(D, D, B | REV),
            [TUI_LOG_SCREEN] = S(D, D, B),
            [TUI_MESSAGE] = S(D, D, B),
            [TUI_MESSAGE_ERROR] = S(D, D, B | REV),
            [TUI_PROMPT] = S(D, D, UL),
            [TUI_KEY] = S(D, D, B),
            [TUI_KEY_LABEL] = S(D, D, REV),
            [TUI_KEY_INFO] = S(D, D, DIM),
            [TUI_HELP_TITLE] = S(D, D, REV | B),
            [TUI_HELP_KEY] = S(D, D, B),
        },
};

/* Black on white, for light terminals and for projectors and screen shares
 * where a white page reads better than a dark one. Every pair sets the
 * background, so the whole screen is white whatever the terminal's is. */
#define W BRIGHT_WHITE
static const tui_theme theme_light = {
    .name = "light",
    .summary = "black on white, for projectors and screen shares",
    .colour = true,
    .style =
        {
            [TUI_NORMAL] = S(BLACK, W, 0),
            [TUI_DIM] = S(GREY, W, 0),
            [TUI_HEADER] = S(BRIGHT_WHITE, BLUE, 0),
            [TUI_HEADER_TITLE] = S(BRIGHT_WHITE, BLUE, B),
            [TUI_HEADER_VALUE] = S(BRIGHT_WHITE, BLUE, B),
            [TUI_HEADER_WARN] = S(BRIGHT_YELLOW, BLUE, B),
            [TUI_STATE_RUNNING] = S(BRIGHT_WHITE, GREEN, B),
            [TUI_STATE_BUSY] = S(BLACK, BRIGHT_YELLOW, B),
            [TUI_STATE_IDLE] = S(BRIGHT_WHITE, GREY, B),
            [TUI_STATE_FAILED] = S(BRIGHT_WHITE, RED, B),
            [TUI_ERROR_TEXT] = S(RED, W, B),
            [TUI_HEADING] = S(BLACK, CYAN, 0),
            [TUI_STAGE_NAME] = S(BLACK, W, B),
            [TUI_STAGE_TYPE] = S(BLUE, W, 0),
            [TUI_SELECTED] = S(BRIGHT_WHITE, BLUE, B),
            [TUI_QUEUE_LABEL] = S(GREY, W, 0),
            [TUI_VALUE] = S(BLACK, W, 0),
            [TUI_WARN] = S(RED, W, B),
            [TUI_PAUSED] = S(BLACK, BRIGHT_YELLOW, B),
            [TUI_STAGE_STATE] = S(BLUE, W, 0),
            [TUI_BAR_EMPTY] = S(WHITE, W, 0),
            [TUI_BAR_LOAD] = S(GREEN, W, 0),
            [TUI_BAR_LOAD_WARM] = S(YELLOW, W, 0),
            [TUI_BAR_LOAD_HOT] = S(RED, W, 0),
            [TUI_BAR_QUEUE] = S(CYAN, W, 0),
            [TUI_BAR_QUEUE_FULL] = S(MAGENTA, W, 0),
            [TUI_BAR_FILL] = S(BLUE, W, 0),
            [TUI_SPARK] = S(GREEN, W, 0),
            [TUI_SPARK_ZERO] = S(WHITE, W, 0),
            [TUI_LOG_TITLE] = S(BLUE, W, B),
            [TUI_LOG_TIME] = S(GREY, W, 0),
            [TUI_LOG_DEBUG] = S(GREY, W, 0),
            [TUI_LOG_INFO] = S(BLACK, W, 0),
            [TUI_LOG_WARN] = S(MAGENTA, W, B),
            [TUI_LOG_ERROR] = S(RED, W, B),
            [TUI_LOG_SCREEN] = S(BLUE, W, 0),
            [TUI_MESSAGE] = S(BLUE, W, B),
            [TUI_MESSAGE_ERROR] = S(RED, W, B),
            [TUI_PROMPT] = S(BLACK, WHITE, 0),
            [TUI_KEY] = S(BLACK, W, B),
            [TUI_KEY_LABEL] = S(BLACK, CYAN, 0),
            [TUI_KEY_INFO] = S(GREY, W, 0),
            [TUI_HELP_TITLE] = S(BRIGHT_WHITE, BLUE, B),
            [TUI_HELP_KEY] = S(BLUE, W, B),
        },
};
#undef W

const tui_theme *const tui_themes[] = {&theme_default, &theme_monochrome, &theme_light, NULL};

const tui_theme *tui_theme_find(const char *name)
{
    for (size_t i = 0; tui_themes[i]; i++)
        if (strcmp(tui_themes[i]->name, name) == 0)
            return tui_themes[i];
    return NULL;
}

size_t tui_theme_index(const tui_theme *t)
{
    for (size_t i = 0; tui_themes[i]; i++)
        if (tui_themes[i] == t)
            return i;
    return 0;
}

const char *tui_theme_list(void)
{
    static char list[128];
    if (!list[0]) {
        size_t used = 0;
        for (size_t i = 0; tui_themes[i] && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                     tui_themes[i]->name);
    }
    return list;
}
