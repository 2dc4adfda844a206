/*
 * textproto: a recursive-descent reader of protobuf's text format (see the
 * header for the subset). One token of lookahead; positions are counted as
 * the reader moves, a tab counting as one column.
 */
#include "format/textproto.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum tok_kind {
    TOK_END,
    TOK_IDENT,
    TOK_STRING,
    TOK_NUMBER,
    TOK_PUNCT, /* one of { } < > : [ ] , ; */
} tok_kind;

typedef struct tok {
    tok_kind kind;
    const char *start; /* in the text */
    size_t len;
    unsigned line, col;
    char punct;
} tok;

typedef struct reader {
    const char *p, *end;
    unsigned line, col;
    tok t; /* the current token */
    lc_error *err;
    bool failed;
} reader;

static int fail(reader *r, unsigned line, unsigned col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(reader *r, unsigned line, unsigned col, const char *fmt, ...)
{
    if (!r->failed) {
        char what[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        for (char *c = what; *c; c++) /* one line, whatever the text held */
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
        lc_error_set(r->err, LC_EFORMAT, "%u:%u: %s", line, col, what);
        r->failed = true;
    }
    return LC_EFORMAT;
}

static void advance_char(reader *r)
{
    if (*r->p == '\n') {
        r->line++;
        r->col = 1;
    } else {
        r->col++;
    }
    r->p++;
}

static bool is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(char c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A token as text, quoted, for messages. */
static const char *tok_text(const tok *t, char *buf, size_t n)
{
    if (t->kind == TOK_END)
        return "the end of the text";
    size_t len = t->len > 40 ? 40 : t->len;
    snprintf(buf, n, "'%.*s%s'", (int)len, t->start, t->len > len ? "..." : "");
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20)
            *c = ' ';
    return buf;
}

/* Read the next token into r->t. */
static int next(reader *r)
{
    for (;;) { /* blanks and comments */
        while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r' ||
                                 *r->p == '\f' || *r->p == '\v'))
            advance_char(r);
        if (r->p < r->end && *r->p == '#') {
            while (r->p < r->end && *r->p != '\n')
                advance_char(r);
            continue;
        }
        break;
    }
    tok *t = &r->t;
    t->start = r->p;
    t->line = r->line;
    t->col = r->col;
    t->len = 0;
    if (r->p >= r->end) {
        t->kind = TOK_END;
        return 0;
    }
    char c = *r->p;
    if (strchr("{}<>:[],;", c) && c != '\0') {
        t->kind = TOK_PUNCT;
        t->punct = c;
        advance_char(r);
        t->len = 1;
        return 0;
    }
    if (is_ident_start(c)) {
        t->kind = TOK_IDENT;
        while (r->p < r->end && is_ident_char(*r->p))
            advance_char(r);
        t->len = (size_t)(r->p - t->start);
        return 0;
    }
    if (c == '"' || c == '\'') {
        t->kind = TOK_STRING;
        advance_char(r);
        while (r->p < r->end && *r->p != c) {
            if (*r->p == '\n')
                return fail(r, t->line, t->col, "%s", "a string that does not end on its line");
            if (*r->p == '\\' && r->p + 1 < r->end && r->p[1] != '\n')
                advance_char(r);
            advance_char(r);
        }
        if (r->p >= r->end)
            return fail(r, t->line, t->col, "%s", "a string that does not end");
        advance_char(r);
        t->len = (size_t)(r->p - t->start);
        return 0;
    }
    if (is_digit(c) || c == '-' || c == '.' || c == '+') {
        t->kind = TOK_NUMBER;
        if (c == '-' || c == '+') {
            advance_char(r);
            while (r->p < r->end && (*r->p == ' ' || *r->p == '\t'))
                advance_char(r);
        }
        /* Letters and dots too: the number's own check says what is wrong
         * with "1.2.3" or "12abc" as a whole. */
        while (r->p < r->end &&
               (is_ident_char(*r->p) || *r->p == '.' ||
                ((*r->p == '-' || *r->p == '+') && (r->p[-1] == 'e' || r->p[-1] == 'E') &&
                 !(r->p - t->start >= 2 && (t->start[1] == 'x' || t->start[1] == 'X')))))
            advance_char(r);
        t->len = (size_t)(r->p - t->start);
        return 0;
    }
    char shown[8];
    if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
        snprintf(shown, sizeof shown, "\\x%02x", (unsigned char)c);
    else
        snprintf(shown, sizeof shown, "%c", c);
    return fail(r, t->line, t->col, "unexpected character '%s'", shown);
}

static bool is_punct(const reader *r, char c)
{
    return r->t.kind == TOK_PUNCT && r->t.punct == c;
}

/* A number as written: decimal or 0x hex integer, or a decimal with
 * fraction and exponent, an optional trailing f, a leading sign; inf, nan.
 * Writes the cleaned text (no spaces after the sign, no trailing f). */
static bool check_number(const char *s, size_t n, char *out, size_t out_n)
{
    size_t o = 0, i = 0;
    if (n == 0 || n + 1 > out_n)
        return false;
    if (s[0] == '-' || s[0] == '+') {
        if (s[0] == '-')
            out[o++] = '-';
        i = 1;
        while (i < n && (s[i] == ' ' || s[i] == '\t'))
            i++;
    }
    size_t body = i;
    if (n - body >= 3) {
        const char *w = s + body;
        size_t wl = n - body;
        if ((wl == 3 && !strncasecmp(w, "inf", 3)) || (wl == 8 && !strncasecmp(w, "infinity", 8)) ||
            (wl == 3 && !strncasecmp(w, "nan", 3))) {
            memcpy(out + o, w, wl);
            out[o + wl] = '\0';
            return true;
        }
    }
    if (n - body > 2 && s[body] == '0' && (s[body + 1] == 'x' || s[body + 1] == 'X')) {
        for (size_t k = body + 2; k < n; k++)
            if (!strchr("0123456789abcdefABCDEF", s[k]))
                return false;
        memcpy(out + o, s + body, n - body);
        out[o + n - body] = '\0';
        return true;
    }
    size_t digits = 0;
    while (i < n && is_digit(s[i]))
        i++, digits++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && is_digit(s[i]))
            i++, digits++;
    }
    if (!digits)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t ed = 0;
        while (i < n && is_digit(s[i]))
            i++, ed++;
        if (!ed)
            return false;
    }
    size_t stop = i;
    if (i < n && (s[i] == 'f' || s[i] == 'F'))
        i++;
    if (i != n)
        return false;
    memcpy(out + o, s + body, stop - body);
    out[o + stop - body] = '\0';
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Append the unescaped bytes of the string token t to buf. */
static int unescape(reader *r, const tok *t, char **buf, size_t *len, size_t *cap)
{
    const char *s = t->start + 1, *e = t->start + t->len - 1;
    unsigned col = t->col + 1;
    while (s < e) {
        if (*len + 4 >= *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *buf = lc_xrealloc(*buf, *cap);
        }
        char c = *s;
        if (c != '\\') {
            (*buf)[(*len)++] = c;
            s++;
            col++;
            continue;
        }
        unsigned at = col;
        s++;
        col++;
        char x = *s++;
        col++;
        int v;
        switch (x) {
        case 'n':
            v = '\n';
            break;
        case 't':
            v = '\t';
            break;
        case 'r':
            v = '\r';
            break;
        case 'a':
            v = '\a';
            break;
        case 'b':
            v = '\b';
            break;
        case 'f':
            v = '\f';
            break;
        case 'v':
            v = '\v';
            break;
        case '\\':
        case '\'':
        case '"':
        case '?':
            v = x;
            break;
        case 'x':
        case 'X': {
            int h = s < e ? hexval(*s) : -1;
            if (h < 0)
                return fail(r, t->line, at, "%s", "'\\x' without hex digits");
            v = h;
            s++, col++;
            if (s < e && hexval(*s) >= 0) {
                v = v * 16 + hexval(*s);
                s++, col++;
            }
            break;
        }
        default:
            if (x >= '0' && x <= '7') {
                v = x - '0';
                for (int k = 0; k < 2 && s < e && *s >= '0' && *s <= '7'; k++, s++, col++)
                    v = v * 8 + (*s - '0');
                if (v > 255)
                    return fail(r, t->line, at, "%s", "an octal escape above \\377");
                break;
            }
            {
                char bad[2] = {x, 0};
                return fail(r, t->line, at, "unknown escape '\\%s'", bad);
            }
        }
        if (v == 0)
            return fail(r, t->line, at, "%s", "a string holding a NUL byte");
        (*buf)[(*len)++] = (char)v;
    }
    return 0;
}

static lc_textproto_field *add_field(lc_textproto_field *block, const tok *name)
{
    if (block->n_fields == block->cap_fields) {
        block->cap_fields = block->cap_fields ? block->cap_fields * 2 : 8;
        block->fields = lc_xrealloc(block->fields, block->cap_fields * sizeof *block->fields);
    }
    lc_textproto_field *f = &block->fields[block->n_fields++];
    memset(f, 0, sizeof *f);
    f->name = lc_xstrndup(name->start, name->len);
    f->line = name->line;
    f->col = name->col;
    return f;
}

static int parse_block_body(reader *r, lc_textproto_field *block, char close, unsigned depth);

/* A value after "name:" (or a list element): a scalar or a block. */
static int parse_value(reader *r, lc_textproto_field *f, unsigned depth)
{
    char buf[48];
    f->value_line = r->t.line;
    f->value_col = r->t.col;
    if (is_punct(r, '{') || is_punct(r, '<')) {
        char close = r->t.punct == '{' ? '}' : '>';
        f->kind = LC_TEXTPROTO_BLOCK;
        if (depth + 1 > LC_TEXTPROTO_MAX_DEPTH)
            return fail(r, r->t.line, r->t.col, "blocks nested more than %d deep",
                        LC_TEXTPROTO_MAX_DEPTH);
        if (next(r) < 0)
            return LC_EFORMAT;
        return parse_block_body(r, f, close, depth + 1);
    }
    switch (r->t.kind) {
    case TOK_STRING: {
        size_t len = 0, cap = 0;
        char *s = NULL;
        f->kind = LC_TEXTPROTO_STRING;
        while (r->t.kind == TOK_STRING) {
            if (unescape(r, &r->t, &s, &len, &cap) < 0 || next(r) < 0) {
                free(s);
                return LC_EFORMAT;
            }
        }
        s = lc_xrealloc(s, len + 1);
        s[len] = '\0';
        f->value = s;
        f->value_len = len;
        return 0;
    }
    case TOK_NUMBER: {
        char clean[128];
        if (!check_number(r->t.start, r->t.len, clean, sizeof clean))
            return fail(r, r->t.line, r->t.col, "%s is not a number",
                        tok_text(&r->t, buf, sizeof buf));
        f->kind = LC_TEXTPROTO_NUMBER;
        f->value = lc_xstrdup(clean);
        f->value_len = strlen(clean);
        return next(r);
    }
    case TOK_IDENT:
        f->kind = LC_TEXTPROTO_IDENT;
        f->value = lc_xstrndup(r->t.start, r->t.len);
        f->value_len = r->t.len;
        /* inf and nan are numbers. */
        if (!strcasecmp(f->value, "inf") || !strcasecmp(f->value, "infinity") ||
            !strcasecmp(f->value, "nan"))
            f->kind = LC_TEXTPROTO_NUMBER;
        return next(r);
    default:
        return fail(r, r->t.line, r->t.col, "expected a value, found %s",
                    tok_text(&r->t, buf, sizeof buf));
    }
}

/* Fields until `close` ('\0': the end of the text). */
static int parse_block_body(reader *r, lc_textproto_field *block, char close, unsigned depth)
{
    char buf[48];
    for (;;) {
        if (close ? is_punct(r, close) : r->t.kind == TOK_END)
            return close ? next(r) : 0;
        if (r->t.kind == TOK_END) {
            char want[4] = {'\'', close, '\'', 0};
            return fail(r, r->t.line, r->t.col, "the text ends inside a block (a %s is missing)",
                        want);
        }
        if (r->t.kind != TOK_IDENT)
            return fail(r, r->t.line, r->t.col, "expected a field name, found %s",
                        tok_text(&r->t, buf, sizeof buf));
        tok name = r->t;
        if (next(r) < 0)
            return LC_EFORMAT;
        bool colon = is_punct(r, ':');
        if (colon && next(r) < 0)
            return LC_EFORMAT;
        if (colon && is_punct(r, '[')) {
            /* A list: one field per element. */
            if (next(r) < 0)
                return LC_EFORMAT;
            bool first = true;
            while (!is_punct(r, ']')) {
                if (!first) {
                    if (!is_punct(r, ','))
                        return fail(r, r->t.line, r->t.col,
                                    "expected ',' or ']' in a list, found %s",
                                    tok_text(&r->t, buf, sizeof buf));
                    if (next(r) < 0)
                        return LC_EFORMAT;
                }
                first = false;
                if (parse_value(r, add_field(block, &name), depth) < 0)
                    return LC_EFORMAT;
            }
            if (next(r) < 0)
                return LC_EFORMAT;
        } else if (!colon && !is_punct(r, '{') && !is_punct(r, '<')) {
            char nm[48];
            return fail(r, r->t.line, r->t.col, "expected ':' or '{' after %s, found %s",
                        tok_text(&name, nm, sizeof nm), tok_text(&r->t, buf, sizeof buf));
        } else if (parse_value(r, add_field(block, &name), depth) < 0) {
            return LC_EFORMAT;
        }
        if ((is_punct(r, ',') || is_punct(r, ';')) && next(r) < 0)
            return LC_EFORMAT;
    }
}

int lc_textproto_parse(const char *text, size_t len, lc_textproto_field *root, lc_error *err)
{
    memset(root, 0, sizeof *root);
    root->kind = LC_TEXTPROTO_BLOCK;
    root->line = root->col = 1;
    reader r = {.p = text, .end = text + len, .line = 1, .col = 1, .err = err};
    if (next(&r) < 0 || parse_block_body(&r, root, '\0', 0) < 0) {
        lc_textproto_free(root);
        return LC_EFORMAT;
    }
    return 0;
}

static void free_fields(lc_textproto_field *f)
{
    for (unsigned i = 0; i < f->n_fields; i++) {
        free_fields(&f->fields[i]);
        free(f->fields[i].name);
        free(f->fields[i].value);
    }
    free(f->fields);
}

void lc_textproto_free(lc_textproto_field *root)
{
    if (!root)
        return;
    free_fields(root);
    free(root->name);
    free(root->value);
    memset(root, 0, sizeof *root);
}

const char *lc_textproto_kind_name(lc_textproto_kind kind)
{
    switch (kind) {
    case LC_TEXTPROTO_BLOCK:
        return "a block";
    case LC_TEXTPROTO_STRING:
        return "a string";
    case LC_TEXTPROTO_NUMBER:
        return "a number";
    case LC_TEXTPROTO_IDENT:
        return "a name";
    }
    return "?";
}
