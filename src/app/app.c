/*
 * app: see app.h.
 */
#include "app/app.h"

#include <stdio.h>
#include <string.h>

void app_print_errors(const char *msg)
{
    for (const char *p = msg; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(stderr, "lcmon: %.*s\n", (int)n, p);
        p += n + (nl ? 1 : 0);
    }
}
