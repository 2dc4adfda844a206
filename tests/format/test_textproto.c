/*
 * test_textproto: protobuf text format read into a tree: every syntax the
 * header lists, the places (line, column) of names and values, and the
 * place and wording of each kind of syntax error.
 */
#include "check.h"
#include "format/textproto.h"

#include <stdlib.h>
#include <string.h>

static int parse(const char *text, lc_textproto_field *root, lc_error *err)
{
    lc_error_clear(err);
    return lc_textproto_parse(text, strlen(text), root, err);
}

static void test_shapes(void)
{
    lc_textproto_field root;
    lc_error err;
    const char *text = "# a comment\n"
                       "a: 1 b: \"x\" 'y'\n"
                       "blk { c: -2.5e3 d: V6, e: true; }\n"
                       "colon: { f: 0x1F }\n"
                       "angle < g: .5f >\n"
                       "list: [1, 2, 3]\n"
                       "blocks: [{h: 1}, {h: 2}]\n"
                       "empty: []\n"
                       "neg: - inf\n";
    CHECK_EQ_INT(parse(text, &root, &err), 0);
    CHECK_EQ_INT(root.kind, LC_TEXTPROTO_BLOCK);
    /* a, b, blk, colon, angle, list x3, blocks x2, neg: empty lists add nothing. */
    CHECK_EQ_INT(root.n_fields, 11);
    if (root.n_fields == 11) {
        lc_textproto_field *f = root.fields;
        CHECK_EQ_STR(f[0].name, "a");
        CHECK_EQ_INT(f[0].kind, LC_TEXTPROTO_NUMBER);
        CHECK_EQ_STR(f[0].value, "1");
        CHECK_EQ_INT(f[0].line, 2);
        CHECK_EQ_INT(f[0].col, 1);
        CHECK_EQ_INT(f[0].value_col, 4);
        CHECK_EQ_INT(f[1].kind, LC_TEXTPROTO_STRING);
        CHECK_EQ_STR(f[1].value, "xy"); /* adjacent strings join */
        CHECK_EQ_INT(f[1].value_len, 2);
        CHECK_EQ_INT(f[2].kind, LC_TEXTPROTO_BLOCK);
        CHECK_EQ_INT(f[2].n_fields, 3);
        CHECK_EQ_STR(f[2].fields[0].value, "-2.5e3");
        CHECK_EQ_INT(f[2].fields[1].kind, LC_TEXTPROTO_IDENT);
        CHECK_EQ_STR(f[2].fields[1].value, "V6");
        CHECK_EQ_INT(f[2].fields[2].line, 3);
        CHECK_EQ_INT(f[2].fields[2].col, 24);
        CHECK_EQ_STR(f[3].fields[0].value, "0x1F");
        CHECK_EQ_STR(f[4].name, "angle");
        CHECK_EQ_STR(f[4].fields[0].value, ".5"); /* the trailing f dropped */
        for (int k = 0; k < 3; k++) {
            CHECK_EQ_STR(f[5 + k].name, "list");
            CHECK_EQ_INT(atoi(f[5 + k].value), k + 1);
        }
        CHECK_EQ_INT(f[8].kind, LC_TEXTPROTO_BLOCK);
        CHECK_EQ_STR(f[9].fields[0].value, "2");
        CHECK_EQ_INT(f[10].kind, LC_TEXTPROTO_NUMBER);
        CHECK_EQ_STR(f[10].value, "-inf");
    }
    lc_textproto_free(&root);
}

static void test_escapes(void)
{
    lc_textproto_field root;
    lc_error err;
    CHECK_EQ_INT(parse("s: \"a\\n\\t\\\\\\\"\\'\\101\\x42\\?\"", &root, &err), 0);
    if (root.n_fields == 1)
        CHECK_EQ_STR(root.fields[0].value, "a\n\t\\\"'AB?");
    lc_textproto_free(&root);
    /* UTF-8 passes through as bytes. */
    CHECK_EQ_INT(parse("s: \"caf\xc3\xa9\"", &root, &err), 0);
    if (root.n_fields == 1)
        CHECK_EQ_INT(root.fields[0].value_len, 5);
    lc_textproto_free(&root);
}

/* A syntax error: its place and a phrase of its message. */
static void expect_error(const char *text, const char *place, const char *phrase)
{
    lc_textproto_field root;
    lc_error err;
    CHECK_EQ_INT(parse(text, &root, &err), LC_EFORMAT);
    CHECK(strncmp(err.msg, place, strlen(place)) == 0);
    CHECK(strstr(err.msg, phrase) != NULL);
    if (strncmp(err.msg, place, strlen(place)) != 0 || !strstr(err.msg, phrase))
        fprintf(stderr, "  text %s: got '%s', want '%s ... %s'\n", text, err.msg, place, phrase);
    CHECK_EQ_INT(root.n_fields, 0);
    CHECK(root.fields == NULL);
}

static void test_errors(void)
{
    expect_error("a: /x", "1:4:", "unexpected character '/'");
    expect_error("a {\n b: 1\n", "3:1:", "a '}' is missing");
    expect_error("a: \"open\n\"", "1:4:", "does not end on its line");
    expect_error("a: 'open", "1:4:", "does not end");
    expect_error("a: \"x\\\ny\"", "1:4:", "does not end on its line");
    expect_error("a 1", "1:3:", "expected ':' or '{' after 'a'");
    expect_error("a: }", "1:4:", "expected a value");
    expect_error("a: 1.2.3", "1:4:", "is not a number");
    expect_error("a: 12abc", "1:4:", "is not a number");
    expect_error("a: [1 2]", "1:7:", "expected ',' or ']'");
    expect_error("a: \"\\q\"", "1:5:", "unknown escape '\\q'");
    expect_error("a: \"x\\000\"", "1:6:", "NUL byte");
    expect_error("a: \"\\400\"", "1:5:", "above \\377");
    expect_error("a: \"\\xg\"", "1:5:", "without hex digits");
    expect_error("{ a: 1 }", "1:1:", "expected a field name");
    expect_error("a: 1 }", "1:6:", "expected a field name");
    expect_error("a: \x01", "1:4:", "'\\x01'");
    /* Nesting beyond the bound is refused, not a deep recursion. */
    size_t depth = LC_TEXTPROTO_MAX_DEPTH + 5;
    char *deep = malloc(depth * 4 + 1);
    size_t o = 0;
    for (size_t i = 0; i < depth; i++) {
        memcpy(deep + o, "a {", 3);
        o += 3;
    }
    deep[o] = '\0';
    lc_textproto_field root;
    lc_error err;
    CHECK_EQ_INT(parse(deep, &root, &err), LC_EFORMAT);
    CHECK(strstr(err.msg, "nested more than") != NULL);
    free(deep);
}

int main(void)
{
    test_shapes();
    test_escapes();
    test_errors();
    return check_finish();
}
