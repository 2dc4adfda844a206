/*
 * convert_config: `lcmon convert-config`, the front of the upstream
 * converter (convert/upstream_config.h): it reads the file, converts it,
 * says when the text is lcmon's YAML already, writes the result, and loads
 * it as lcmon would before it is trusted.
 */
#include "app/convert_config.h"

#include "app/app.h"
#include "app/convert/upstream_config.h"
#include "core/error.h"
#include "pipeline/config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `lcmon convert-config FILE [-o OUT]`: upstream's DataLoaderConfig text
 * as lcmon YAML, checked by lcmon's own loading before it is trusted. */
int convert_config_main(int argc, char **argv)
{
    static const char usage_line[] = "usage: lcmon convert-config FILE [-o OUT.yaml]\n";
    const char *in = NULL, *out_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf(
                "%s\nReads upstream lczero-training's loader configuration (a DataLoaderConfig in\n"
                "protobuf text format, alone or inside a whole training config; FILE - reads\n"
                "stdin) and prints the lcmon YAML configuration that does the same, with a\n"
                "comment on every field lcmon has no equivalent for. The result is checked as\n"
                "--check-config would; exit status 1 when the text cannot be converted or the\n"
                "result does not load (it is still printed, to be fixed by hand).\n",
                usage_line);
            return 0;
        }
        if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            out_path = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "lcmon: convert-config: unknown option '%s'\n%s", argv[i], usage_line);
            return 2;
        } else if (!in) {
            in = argv[i];
        } else {
            fprintf(stderr, "lcmon: convert-config: one file at a time\n%s", usage_line);
            return 2;
        }
    }
    if (!in) {
        fprintf(stderr, "lcmon: %s", usage_line);
        return 2;
    }
    char *text;
    size_t len;
    lc_error err;
    lc_error_clear(&err);
    if (lc_config_read_text(in, &text, &len, &err) != 0) {
        app_print_errors(err.msg);
        return 1;
    }
    const char *origin = !strcmp(in, "-") ? "<stdin>" : in;
    lc_upstream_result r;
    int rc = lc_upstream_convert(text, len, origin, &r);
    bool yaml = rc != 0 && r.not_textproto && lc_config_text_is_lcmon(text, len);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "lcmon: %s: cannot convert; nothing was written:\n", origin);
        if (yaml)
            fprintf(stderr,
                    "lcmon: %s: is lcmon YAML already (a 'stages' list), not upstream's protobuf "
                    "text: nothing to convert; run it with: lcmon --config %s (lcmon "
                    "--check-config %s checks it)\n",
                    origin, origin, origin);
        else
            app_print_errors(r.errors);
        lc_upstream_result_free(&r);
        return 1;
    }
    FILE *out = stdout;
    if (out_path && !(out = fopen(out_path, "w"))) {
        fprintf(stderr, "lcmon: %s: cannot write: %s\n", out_path, strerror(errno));
        lc_upstream_result_free(&r);
        return 1;
    }
    fputs(r.yaml, out);
    if (out != stdout && fclose(out) != 0) {
        fprintf(stderr, "lcmon: %s: write error: %s\n", out_path, strerror(errno));
        lc_upstream_result_free(&r);
        return 1;
    }
    fflush(stdout);
    /* What lcmon itself makes of the result. */
    lc_config *cfg = NULL;
    const char *shown = out_path ? out_path : "the converted configuration";
    rc = lc_config_load_string(r.yaml, strlen(r.yaml), shown, &cfg, &err);
    if (rc != 0) {
        fprintf(stderr, "lcmon: %s: converted, but lcmon refuses the result (fix these by hand):\n",
                origin);
        app_print_errors(err.msg);
    } else {
        fprintf(
            stderr,
            "lcmon: %s: %u stage%s and %u output%s converted%s%s; %u field%s kept as comments%s\n",
            origin, r.n_stages, r.n_stages == 1 ? "" : "s", r.n_outputs,
            r.n_outputs == 1 ? "" : "s", out_path ? " to " : "", out_path ? out_path : "",
            r.n_unmapped, r.n_unmapped == 1 ? "" : "s",
            r.n_dropped ? " (and stages lcmon does not have, commented out)" : "");
    }
    /* What the result keeps of upstream's where lcmon chooses otherwise,
     * and how to turn lcmon's choice on: a line each. */
    for (const char *p = r.notes; p && *p;) {
        const char *nl = strchr(p, '\n');
        int n = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(stderr, "lcmon: %s: %.*s\n", origin, n, p);
        p += n + (nl ? 1 : 0);
    }
    lc_config_free(cfg);
    lc_upstream_result_free(&r);
    return rc != 0;
}
