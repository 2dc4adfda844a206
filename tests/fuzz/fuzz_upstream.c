/*
 * fuzz_upstream: upstream's loader configuration (protobuf text format)
 * through `lcmon convert-config`'s converter, and its YAML through lcmon's
 * own configuration loading.
 *
 * Invariants: a refused text says why, every line naming the text and a
 * line and column; an accepted one gives YAML that libyaml reads (what lcmon
 * then refuses, if anything, is a setting, never the YAML's syntax), and
 * when lcmon takes it, it holds the stages the converter counted.
 */
#include "fuzz.h"

#include "pipeline/config.h"
#include "app/convert/upstream_config.h"

#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lc_upstream_result r;
    int rc = lc_upstream_convert((const char *)data, size, "fuzz.pbtxt", &r);
    if (rc < 0) {
        FUZZ_CHECK(r.yaml == NULL && r.errors && r.errors[0]);
        for (const char *p = r.errors; *p;) {
            unsigned line, col;
            FUZZ_CHECK(strncmp(p, "fuzz.pbtxt:", 11) == 0);
            FUZZ_CHECK(sscanf(p + 11, "%u:%u:", &line, &col) == 2 && line >= 1 && col >= 1);
            const char *nl = strchr(p, '\n');
            p = nl ? nl + 1 : p + strlen(p);
        }
        lc_upstream_result_free(&r);
        return 0;
    }
    FUZZ_CHECK(r.yaml && !r.errors && strncmp(r.yaml, "# lcmon configuration", 21) == 0);
    lc_config *cfg = NULL;
    lc_error err = {0};
    if (lc_config_load_string(r.yaml, strlen(r.yaml), "converted.yaml", &cfg, &err) == 0) {
        FUZZ_CHECK(cfg->n_stages == r.n_stages);
        lc_config_free(cfg);
    } else {
        FUZZ_CHECK(err.msg[0] != '\0');
        FUZZ_CHECK(strstr(err.msg, "libyaml") == NULL);
    }
    lc_upstream_result_free(&r);
    return 0;
}
