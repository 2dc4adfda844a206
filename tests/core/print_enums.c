/*
 * print_enums: the C enums that mirror the proto's, one line a value,
 * "ENUM NAME NUMBER" (the proto's enum and value names, the C number), then
 * "ENUM - COUNT" with the enum's sentinel, and the windows' short names as
 * "WINDOWS NAME NUMBER". tests/python/test_enums.py reads it and checks it
 * against the .proto files and python/lcmon/wire.py. Each line comes from the
 * enum's own list (core/metrics.h), so a value added there is printed with
 * no change here.
 */
#include "core/metric_windows.h"
#include "core/metrics.h"

#include <stdio.h>

static void line(const char *enum_name, const char *name, int number)
{
    printf("%s %s %d\n", enum_name, name, number);
}

int main(void)
{
#define ROLE(n) line("MetricRole", #n, LC_##n);
    LC_METRIC_ROLES(ROLE)
    line("MetricRole", "-", LC_METRIC_ROLE_COUNT_);
#define SHOW(n) line("As", #n, LC_SHOW_##n);
    LC_SHOW_AS_LIST(SHOW)
    line("As", "-", LC_SHOW_AS_COUNT_);
#define STATE(n) line("StageState", #n, LC_##n);
    LC_STAGE_STATES(STATE)
    line("StageState", "-", LC_STAGE_STATE_COUNT_);
#define KIND(c, proto) line("CountKind", #proto, LC_METRIC_##c);
    LC_METRIC_COUNT_KINDS(KIND)
    /* The kinds go on past CountKind (gauge, text, statistic): no count. */
#define WINDOW(n) line("MetricWindow", #n, LC_##n);
    LC_WINDOWS(WINDOW)
    line("MetricWindow", "-", LC_WINDOW_COUNT);
    for (int w = 0; w < LC_WINDOW_COUNT; w++)
        line("WINDOWS", lc_window_name((lc_window)w), w);
    return 0;
}
