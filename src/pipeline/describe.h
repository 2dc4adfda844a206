/*
 * describe: what a configuration's stages are, for people and clients: the
 * stage descriptions of the monitor's hello (name, type, input, output queue,
 * its capacity and item type).
 */
#ifndef LC_PIPELINE_DESCRIBE_H
#define LC_PIPELINE_DESCRIBE_H

#include "pipeline/config.h"

#include <stddef.h>

#include "monitor.pb-c.h"

/* One malloc'd description a stage, in order; *n gets their number. Free
 * with lc_config_describe_free. */
Lcmon__StageDescription **lc_config_describe(const lc_config *cfg, size_t *n);
void lc_config_describe_free(Lcmon__StageDescription **d, size_t n);

#endif
