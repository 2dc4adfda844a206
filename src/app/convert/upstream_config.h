/*
 * upstream_config: `lcmon convert-config`, upstream lczero-training's
 * loader configuration (a DataLoaderConfig in protobuf text format, alone
 * or as the data_loader block of a whole training config) turned into an
 * lcmon YAML configuration.
 *
 * Every upstream field is either converted (with upstream's default written
 * out where lcmon's differs, so the run samples as upstream would) or kept
 * as a comment saying why lcmon has no equivalent. Fields upstream would
 * refuse (unknown names, wrong kinds, a field given twice) are errors with
 * line and column, all of them at once, as upstream would refuse the file.
 *
 * It needs only core/ and the protobuf text reader (format/textproto.h);
 * `lcmon convert-config` (src/app/convert_config.c) is its front: it reads
 * the file, says when the text is lcmon's YAML already, and loads the
 * result as lcmon would.
 *
 * The mapping, field by field, is in docs/upstream.md (tests hold the
 * schema and the mapping to it); the reading rules in docs/pipelines.md
 * ("Configs from upstream").
 */
#ifndef LC_APP_CONVERT_UPSTREAM_CONFIG_H
#define LC_APP_CONVERT_UPSTREAM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

typedef struct lc_upstream_result {
    char *yaml;          /* the lcmon configuration; NULL when there are errors */
    char *errors;        /* one a line, "origin:LINE:COL: what"; NULL when none */
    char *notes;         /* one a line: what the result keeps of upstream's where lcmon
                            has a better choice, and how to turn that on; NULL: none */
    unsigned n_stages;   /* lcmon stages written (the pipes' writers included) */
    unsigned n_outputs;  /* upstream outputs, each a fifo_writer */
    unsigned n_unmapped; /* fields kept as comments */
    unsigned n_dropped;  /* stages lcmon has no type for (commented out) */
    bool not_textproto;  /* the text is not protobuf text at all (errors: the parser's) */
} lc_upstream_result;

/* Convert text (len bytes) read from `origin` (a name for messages and the
 * header comment). 0 with out->yaml set, or LC_ECONFIG with out->errors
 * set. Free with lc_upstream_result_free either way. */
int lc_upstream_convert(const char *text, size_t len, const char *origin, lc_upstream_result *out);
void lc_upstream_result_free(lc_upstream_result *r);

#endif
