/*
 * The screen's keys run the loader's commands by name: every name the key
 * table gives is a command of the loader's tables (its own, every stage's,
 * or a stage type's), as this build's catalogue lists them, and no key
 * runs one of ctl's own words. No terminal needed.
 */
#include "check.h"

#include "monitor/local.h"
#include "tui/screen.h"

#include <string.h>

/* Whether the catalogue has the command: the loader's or any stage type's. */
static bool in_tables(const Lcmon__Hello *h, const char *name)
{
    for (size_t i = 0; i < h->n_commands; i++)
        if (strcmp(h->commands[i]->name, name) == 0)
            return true;
    for (size_t i = 0; i < h->n_stages; i++)
        for (size_t k = 0; k < h->stages[i]->n_commands; k++)
            if (strcmp(h->stages[i]->commands[k]->name, name) == 0)
                return true;
    return false;
}

static void test_every_key_command_is_in_the_tables(void)
{
    const char *names[64];
    size_t n = tui_key_commands(names, 64);
    CHECK(n >= 6); /* pause, resume, stop, start, reload, anchor-set, anchor-reset */
    Lcmon__Hello *h = lc_monitor_local_catalog();
    for (size_t i = 0; i < n; i++)
        if (!in_tables(h, names[i]))
            CHECK_EQ_STR(names[i], "(a command of the loader's tables)");
    /* And the test itself would see a name that is not. */
    CHECK(!in_tables(h, "no-such-command"));
    lcmon__hello__free_unpacked(h, NULL);
}

int main(void)
{
    test_every_key_command_is_in_the_tables();
    return check_finish();
}
