/*
 * registry: the stage types lcmon knows, looked up by their YAML key.
 * Adding a stage type is one file exporting its class table, one line in
 * registry.c, and tests (its YAML block comes from its class table).
 */
#ifndef LC_STAGES_REGISTRY_H
#define LC_STAGES_REGISTRY_H

#include "stages/stage.h"

#include <stddef.h>

/* NULL-terminated, in a stable order (config blocks are indexed by it). */
extern const lc_stage_class *const lc_stage_registry[];

size_t lc_stage_registry_count(void);
const lc_stage_class *lc_stage_class_find(const char *type_name);

#endif
