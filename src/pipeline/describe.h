/*
 * describe: what a configuration's stages are, for people and clients: the
 * stage descriptions of the monitor's hello (name, type, input, output queue,
 * its capacity and item type, how to show its metrics, its commands), and a
 * command as the hello lists it.
 */
#ifndef LC_PIPELINE_DESCRIBE_H
#define LC_PIPELINE_DESCRIBE_H

#include "core/command.h"
#include "pipeline/config.h"

#include <stddef.h>

#include "monitor.pb-c.h"

/* One malloc'd description a stage, in order; *n gets their number. Free
 * with lc_config_describe_free. */
Lcmon__StageDescription **lc_config_describe(const lc_config *cfg, size_t *n);
void lc_config_describe_free(Lcmon__StageDescription **d, size_t n);

/* A command as the hello lists it; malloc'd (free_unpacked frees it). */
Lcmon__CommandDescription *lc_command_describe(const lc_command_info *c);
/* The hello's descriptions of every stage type there is, each named after
 * its type, and of their commands: what a loader of this build could
 * answer (`lcmon ctl help` without a loader). Free as above. */
Lcmon__StageDescription **lc_registry_describe(size_t *n);

#endif
