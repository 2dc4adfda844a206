#include "stages/registry.h"

#include <string.h>

extern const lc_stage_class lc_file_path_provider_class;
extern const lc_stage_class lc_chunk_source_loader_class;
extern const lc_stage_class lc_shuffling_chunk_pool_class;
extern const lc_stage_class lc_chunk_reader_class;
extern const lc_stage_class lc_chunk_validator_class;
extern const lc_stage_class lc_chunk_unpacker_class;
extern const lc_stage_class lc_shuffling_frame_sampler_class;
extern const lc_stage_class lc_tensor_generator_class;
extern const lc_stage_class lc_fifo_writer_class;
extern const lc_stage_class lc_parquet_game_source_class;
extern const lc_stage_class lc_game_tokenizer_class;

const lc_stage_class *const lc_stage_registry[] = {
    &lc_file_path_provider_class,
    &lc_chunk_source_loader_class,
    &lc_shuffling_chunk_pool_class,
    &lc_chunk_reader_class,
    &lc_chunk_validator_class,
    &lc_chunk_unpacker_class,
    &lc_shuffling_frame_sampler_class,
    &lc_tensor_generator_class,
    &lc_fifo_writer_class,
    &lc_parquet_game_source_class,
    &lc_game_tokenizer_class,
    NULL,
};

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
