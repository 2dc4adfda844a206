/*
 * chunks_tool: `lcmon chunks`, a look at lc0 training data without a
 * pipeline: `dump` shows the records of a .gz or of a .tar's members (text
 * or JSON), `stats` sums up a folder (record versions, input formats,
 * results, game lengths, bad chunks) as terminal histograms or JSON,
 * `check` gives the chunk validator's verdict on every file of a folder,
 * `rescore` rescores one game as the chunk_rescorer stage would (upstream's
 * rescore_chunk tool) and `weights` gives the distribution of the sampling
 * weights a config gives a folder's positions (upstream's
 * position_weight_stats).
 *
 * Files: chunks_tool.c (the verbs' command lines and their table),
 * chunks_verbs.h (the verbs: chunks_dump.c, chunks_stats.c,
 * chunks_check.c, chunks_rescore.c, chunks_weights.c), chunks_common.c
 * (what the verbs share: JSON, the walk over a folder that stats, check
 * and weights share, the stage settings rescore and weights read). The
 * calls go one way, tool -> verbs -> common. Every rule comes from the format
 * layer: a file is opened as the loader opens it (lc_chunk_source_open, raw
 * tar members included), a chunk loaded as the pool loads it
 * (lc_chunk_source_load) and checked as the validator checks it
 * (lc_chunk_check). The app layer: nothing includes this but main.c.
 */
#ifndef LC_APP_CHUNKS_CHUNKS_TOOL_H
#define LC_APP_CHUNKS_CHUNKS_TOOL_H

/* `lcmon chunks VERB ...`: argv[0] is "chunks". Returns the exit status:
 * 0 done (check: every chunk good), 1 a file could not be read or (check)
 * a bad chunk was found, 2 a usage error. */
int chunks_main(int argc, char **argv);

#endif
