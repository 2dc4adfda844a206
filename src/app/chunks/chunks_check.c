/*
 * chunks_check: `lcmon chunks check`, the chunk validator's verdict on every
 * .gz and .tar of a folder (see chunks_tool.h). A chunk is bad when it does
 * not load (what the pool drops) or a record fails the record checks (what
 * chunk_validator drops: lc_chunk_check); a file is bad when it has a bad
 * chunk or cannot be opened. Tar members that are no chunk (a LICENSE) are
 * named on their file's line but make nothing bad: the loader skips them
 * too. A tar cut short or damaged is bad, with what `stats` calls it
 * (truncated_archive), even when the members before the damage are good:
 * the loader keeps those and loses the rest. Files that are not .gz or
 * .tar are counted, not read.
 *
 * One line a file: "ok   PATH: N chunks, P positions", or "BAD  PATH: ..."
 * with each bad chunk's member, record and reason; then a summary line.
 * Exit status 0 when every file is good, 1 when one is bad.
 */
#include "app/chunks/chunks_verbs.h"

#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What one file held; reset at each file. */
typedef struct file_verdict {
    const char *reason, *why; /* the file did not open */
    const char *damage;       /* a tar cut short or damaged: what (its chunk source's) */
    uint64_t chunks, positions, bad;
    char *notes; /* "; member 'x': record 3: reason" ..., malloc'd */
    size_t len;
    bool json_first_note;
} file_verdict;

typedef struct check_run {
    bool json, json_open; /* json_open: the files' array has begun */
    file_verdict f;
    uint64_t files, ok_files, bad_files, other_files, chunks, bad_chunks, skipped, positions;
} check_run;

static void note(file_verdict *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(file_verdict *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    f->notes = lc_xrealloc(f->notes, f->len + (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(f->notes + f->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    f->len += (size_t)n;
}

static void note_visit(check_run *r, const chunk_visit *v);

static void check_file(void *ctx, const char *path, const lc_chunk_source *src, const char *reason,
                       const char *why)
{
    check_run *r = ctx;
    (void)path;
    free(r->f.notes);
    r->f = (file_verdict){.reason = reason, .why = why, .json_first_note = true};
    if (!src && !reason)
        r->other_files++;
    if (src && (r->f.damage = lc_chunk_source_damage(src))) {
        chunk_visit v = {.path = path,
                         .member = NULL,
                         .reason = "truncated_archive",
                         .detail = r->f.damage,
                         .record = -1};
        note_visit(r, &v);
    }
}

/* s as a JSON string, appended to the file's notes. */
static void note_json_string(file_verdict *f, const char *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    chunks_json_string(m, s);
    fclose(m);
    note(f, "%s", text);
    free(text);
}

/* One bad chunk or skipped member, or the damage of the whole archive (no
 * member), as text or as a JSON object. */
static void note_visit(check_run *r, const chunk_visit *v)
{
    file_verdict *f = &r->f;
    bool skip = !strcmp(v->reason, "skipped_member");
    if (r->json) {
        /* A JSON array's elements, commas between. */
        note(f, "%s{\"member\":", f->json_first_note ? "" : ",");
        f->json_first_note = false;
        if (!v->member) {
            note(f, "null,\"chunk\":null");
        } else {
            note_json_string(f, v->member);
            note(f, ",\"%s\":%zu", skip ? "skipped" : "chunk", v->chunk);
        }
        note(f, ",\"record\":");
        if (v->record >= 0)
            note(f, "%ld", v->record);
        else
            note(f, "null");
        note(f, ",\"reason\":\"%s\",\"message\":", v->reason);
        note_json_string(f, v->detail ? v->detail : "");
        note(f, "}");
        return;
    }
    if (!v->member) {
        note(f, "%s %s (%s)", f->len ? ";" : "", v->reason, v->detail);
        return;
    }
    note(f, "%s member '%s'", f->len ? ";" : "", v->member);
    if (v->record >= 0)
        note(f, ": record %ld: %s", v->record, v->reason);
    else if (skip)
        note(f, " skipped: %s", v->detail ? v->detail : "");
    else
        note(f, ": %s (%s)", v->reason, v->detail ? v->detail : "");
}

static void check_chunk(void *ctx, const chunk_visit *v)
{
    check_run *r = ctx;
    if (!v->reason) {
        r->f.chunks++;
        r->f.positions += v->data->n_records;
        return;
    }
    if (!strcmp(v->reason, "skipped_member")) {
        r->skipped++;
    } else {
        r->f.chunks++;
        r->f.bad++;
    }
    note_visit(r, v);
}

static void print_file_json(const check_run *r, const char *path, bool bad)
{
    const file_verdict *f = &r->f;
    printf("%s{\"path\":", r->files > 1 ? "," : "");
    chunks_json_string(stdout, path);
    printf(",\"ok\":%s,\"chunks\":%llu,\"bad_chunks\":%llu,\"positions\":%llu,\"error\":",
           bad ? "false" : "true", (unsigned long long)f->chunks, (unsigned long long)f->bad,
           (unsigned long long)f->positions);
    if (f->reason) {
        printf("{\"reason\":\"%s\",\"message\":", f->reason);
        chunks_json_string(stdout, f->why ? f->why : "");
        printf("}");
    } else {
        printf("null");
    }
    printf(",\"problems\":[%s]}\n", f->notes ? f->notes : "");
}

static void check_file_done(void *ctx, const char *path, const lc_chunk_source *src)
{
    check_run *r = ctx;
    file_verdict *f = &r->f;
    if (!src && !f->reason)
        return; /* not a .gz or .tar */
    bool bad = f->reason || f->bad || f->damage;
    r->files++;
    r->chunks += f->chunks;
    r->bad_chunks += f->bad;
    r->positions += f->positions;
    if (bad)
        r->bad_files++;
    else
        r->ok_files++;
    if (r->json) {
        if (!r->json_open)
            printf("{\"files\":[\n");
        r->json_open = true;
        print_file_json(r, path, bad);
    } else if (f->reason) {
        printf("BAD  %s: %s (%s)\n", path, f->reason, f->why ? f->why : "");
    } else {
        printf("%s  %s: %llu chunk%s, %llu positions", bad ? "BAD" : "ok ", path,
               (unsigned long long)f->chunks, f->chunks == 1 ? "" : "s",
               (unsigned long long)f->positions);
        if (f->bad)
            printf(", %llu bad", (unsigned long long)f->bad);
        printf("%s%s\n", f->len ? ":" : "", f->notes ? f->notes : "");
    }
    fflush(stdout);
}

static void print_summary(const check_run *r, const char *dir)
{
    if (r->json) {
        printf("%s],\"summary\":{\"directory\":", r->json_open ? "" : "{\"files\":[");
        chunks_json_string(stdout, dir);
        printf(",\"files\":%llu,\"ok_files\":%llu,\"bad_files\":%llu,\"other_files\":%llu,"
               "\"chunks\":%llu,\"bad_chunks\":%llu,\"skipped_members\":%llu,\"positions\":%llu}}"
               "\n",
               (unsigned long long)r->files, (unsigned long long)r->ok_files,
               (unsigned long long)r->bad_files, (unsigned long long)r->other_files,
               (unsigned long long)r->chunks, (unsigned long long)r->bad_chunks,
               (unsigned long long)r->skipped, (unsigned long long)r->positions);
        return;
    }
#define S_(n) ((n) == 1 ? "" : "s")
    printf("%s: %llu file%s checked: %llu ok, %llu bad; %llu chunk%s, %llu bad; %llu position%s; "
           "%llu tar member%s skipped; %llu other file%s not read\n",
           dir, (unsigned long long)r->files, S_(r->files), (unsigned long long)r->ok_files,
           (unsigned long long)r->bad_files, (unsigned long long)r->chunks, S_(r->chunks),
           (unsigned long long)r->bad_chunks, (unsigned long long)r->positions, S_(r->positions),
           (unsigned long long)r->skipped, S_(r->skipped), (unsigned long long)r->other_files,
           S_(r->other_files));
#undef S_
}

int chunks_check(const char *dir, bool json)
{
    check_run r = {.json = json};
    static const chunk_walk_hooks hooks = {check_file, check_chunk, check_file_done};
    long n = chunks_walk(dir, &hooks, &r);
    free(r.f.notes);
    if (n < 0)
        return 1;
    print_summary(&r, dir);
    return r.bad_files ? 1 : 0;
}
