/*
 * registry: see registry.h. One line a stage type, in the order --help and
 * --print-schema list them: the class table lc_<type>_class that the
 * type's file exports.
 */
#include "stages/registry.h"

#include <string.h>

#define LC_STAGE_TYPES(X)                                                                          \
    X(file_path_provider)                                                                          \
    X(chunk_source_loader)                                                                         \
    X(chunk_source_splitter)                                                                       \
    X(shuffling_chunk_pool)                                                                        \
    X(chunk_reader)                                                                                \
    X(join)                                                                                        \
    X(chunk_validator)                                                                             \
    X(chunk_rescorer)                                                                              \
    X(chunk_unpacker)                                                                              \
    X(shuffling_frame_sampler)                                                                     \
    X(tensor_generator)                                                                            \
    X(fifo_writer)                                                                                 \
    X(parquet_game_source)                                                                         \
    X(game_tokenizer)

#define DECLARE(type) extern const lc_stage_class lc_##type##_class;
LC_STAGE_TYPES(DECLARE)

#define ENTRY(type) &lc_##type##_class,
const lc_stage_class *const lc_stage_registry[] = {LC_STAGE_TYPES(ENTRY) NULL};

size_t lc_stage_registry_count(void)
{
    size_t n = 0;
    while (lc_stage_registry[n])
        n++;
    return n;
}

const lc_stage_class *lc_stage_class_find(const char *type_name)
{
    for (size_t i = 0; lc_stage_registry[i]; i++)
        if (strcmp(lc_stage_registry[i]->type_name, type_name) == 0)
            return lc_stage_registry[i];
    return NULL;
}
