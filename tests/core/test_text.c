/*
 * test_text: lc_expand_env (set variables, defaults, an unset variable
 * without a default naming itself, text without braces, values longer than
 * the first buffer), lc_basename, lc_has_suffix, and byte sizes read
 * (lc_parse_bytes: units of 1000 and 1024, decimals, spaces, bad text) and
 * written (lc_format_bytes), and text made safe to show (lc_utf8_next,
 * lc_text_escape, lc_text_json: control characters, C1, invalid UTF-8).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/text.h"

/* Expand and compare; NULL `want` means the expansion must fail naming
 * `want_bad`. */
static void expect(const char *in, const char *want, const char *want_bad)
{
    char *bad = NULL;
    char *out = lc_expand_env(in, &bad);
    if (want) {
        CHECK_EQ_STR(out, want);
        CHECK(bad == NULL);
    } else {
        CHECK(out == NULL);
        CHECK_EQ_STR(bad, want_bad);
    }
    free(out);
    free(bad);
}

static void test_expand_env(void)
{
    setenv("LC_T_A", "hello", 1);
    setenv("LC_T_B", "/data/lc0", 1);
    unsetenv("LC_T_UNSET");

    expect("${LC_T_A}", "hello", NULL);
    expect("x/${LC_T_A}/y", "x/hello/y", NULL);
    expect("${LC_T_B}/${LC_T_A}.tar", "/data/lc0/hello.tar", NULL);
    expect("${LC_T_A}${LC_T_A}", "hellohello", NULL);

    /* Defaults: used when unset, ignored when set, may be empty or contain
     * slashes and further ":-". */
    expect("${LC_T_UNSET:-dflt}/z", "dflt/z", NULL);
    expect("${LC_T_A:-dflt}", "hello", NULL);
    expect("[${LC_T_UNSET:-}]", "[]", NULL);
    expect("${LC_T_UNSET:-/tmp/a b}", "/tmp/a b", NULL);
    expect("${LC_T_UNSET:-a:-b}", "a:-b", NULL);
    /* A ":-" after the closing brace belongs to the plain text. */
    expect("${LC_T_A}:-x", "hello:-x", NULL);

    /* Unset without a default: NULL, naming the variable. */
    expect("${LC_T_UNSET}", NULL, "LC_T_UNSET");
    expect("ok/${LC_T_A}/${LC_T_UNSET}/more", NULL, "LC_T_UNSET");
    /* bad_name may be NULL. */
    CHECK(lc_expand_env("${LC_T_UNSET}", NULL) == NULL);

    /* No braces, or no closing brace: the text is kept as it is. */
    expect("$LC_T_A/x", "$LC_T_A/x", NULL);
    expect("cost $5", "cost $5", NULL);
    expect("${LC_T_A", "${LC_T_A", NULL);
    expect("trailing $", "trailing $", NULL);
    expect("", "", NULL);
    expect("no variables at all", "no variables at all", NULL);

    /* Values longer than the initial buffer (input length + 64). */
    char big[1001];
    memset(big, 'v', 1000);
    big[1000] = '\0';
    setenv("LC_T_BIG", big, 1);
    char *bad = NULL;
    char *out = lc_expand_env("<${LC_T_BIG}|${LC_T_BIG}|${LC_T_UNSET:-d}>", &bad);
    CHECK(out != NULL);
    if (out) {
        CHECK_EQ_U64(strlen(out), 2005);
        CHECK(out[0] == '<' && out[1001] == '|' && out[2002] == '|');
        CHECK_EQ_STR(out + 2003, "d>");
        CHECK(strspn(out + 1, "v") == 1000);
    }
    free(out);
    free(bad);
    unsetenv("LC_T_BIG");
}

static void test_basename(void)
{
    CHECK_EQ_STR(lc_basename("a/b/c.tar"), "c.tar");
    CHECK_EQ_STR(lc_basename("/abs/file.gz"), "file.gz");
    CHECK_EQ_STR(lc_basename("plain"), "plain");
    CHECK_EQ_STR(lc_basename("dir/"), "");
    CHECK_EQ_STR(lc_basename("/"), "");
    CHECK_EQ_STR(lc_basename(""), "");
    const char *p = "x/y";
    CHECK(lc_basename(p) == p + 2); /* a pointer into the argument */
}

static void test_has_suffix(void)
{
    CHECK(lc_has_suffix("training.tar.gz", ".gz"));
    CHECK(lc_has_suffix("training.tar.gz", ".tar.gz"));
    CHECK(!lc_has_suffix("training.tar.gz", ".tar"));
    CHECK(lc_has_suffix(".gz", ".gz"));
    CHECK(!lc_has_suffix("gz", ".gz"));
    CHECK(lc_has_suffix("abc", ""));
    CHECK(lc_has_suffix("", ""));
    CHECK(!lc_has_suffix("", "x"));
    CHECK(!lc_has_suffix("file.GZ", ".gz"));
}

static void expect_bytes(const char *text, uint64_t want)
{
    uint64_t got = 12345;
    bool ok = lc_parse_bytes(text, &got);
    if (!ok)
        fprintf(stderr, "'%s' did not parse\n", text);
    CHECK(ok);
    CHECK_EQ_U64(got, want);
}

static void test_parse_bytes(void)
{
    expect_bytes("0", 0);
    expect_bytes("123", 123);
    expect_bytes("123B", 123);
    expect_bytes("512M", 512000000);
    expect_bytes("512 MB", 512000000);
    expect_bytes("6G", 6000000000ull);
    expect_bytes("6gb", 6000000000ull);
    expect_bytes("1.5G", 1500000000ull);
    expect_bytes("8GiB", 8589934592ull);
    expect_bytes("8 gib", 8589934592ull);
    expect_bytes("2KiB", 2048);
    expect_bytes("3MiB", 3145728);
    expect_bytes("1TiB", 1099511627776ull);
    expect_bytes("2T", 2000000000000ull);
    expect_bytes("  7k", 7000);
    expect_bytes(".5K", 500);
    uint64_t v = 99;
    static const char *const bad[] = {"",  "auto", "-1",      "5X",   "5 G B",
                                      "G", "1e30", "12 MiBs", "0x10", "nan"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bool ok = lc_parse_bytes(bad[i], &v);
        if (ok)
            fprintf(stderr, "'%s' parsed as %llu\n", bad[i], (unsigned long long)v);
        CHECK(!ok);
    }
    CHECK(!lc_parse_bytes(NULL, &v));
    CHECK_EQ_U64(v, 99); /* untouched on failure */
}

static void test_format_bytes(void)
{
    char b[32];
    lc_format_bytes(b, sizeof b, 512);
    CHECK_EQ_STR(b, "512 B");
    lc_format_bytes(b, sizeof b, 1500);
    CHECK_EQ_STR(b, "1.50 kB");
    lc_format_bytes(b, sizeof b, 24.7e6);
    CHECK_EQ_STR(b, "24.7 MB");
    lc_format_bytes(b, sizeof b, 6.32e9);
    CHECK_EQ_STR(b, "6.32 GB");
    lc_format_bytes(b, sizeof b, 812e9);
    CHECK_EQ_STR(b, "812 GB");
    lc_format_bytes(b, sizeof b, -3);
    CHECK_EQ_STR(b, "0 B");
}

static void json_put(void *ctx, const char *p, size_t n)
{
    strncat(ctx, p, n);
}

static void test_escape(void)
{
    long cp;
    CHECK_EQ_U64(lc_utf8_next("\xc3\xa9", &cp), 2);
    CHECK_EQ_U64((uint64_t)cp, 0xe9);
    CHECK_EQ_U64(lc_utf8_next("\xe2\x82\xac", &cp), 3);
    CHECK_EQ_U64((uint64_t)cp, 0x20ac);
    /* overlong, surrogate, stray continuation, cut short: one bad byte */
    const char *bad[] = {"\xc0\xaf", "\xed\xa0\x80", "\x80", "\xe2\x82", "\xf5\x80\x80\x80"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_EQ_U64(lc_utf8_next(bad[i], &cp), 1);
        CHECK(cp == -1);
    }
    CHECK_EQ_U64(lc_utf8_next("", &cp), 0);
    CHECK(lc_text_printable('a') && lc_text_printable(0xe9) && !lc_text_printable(0x1b));
    CHECK(!lc_text_printable(0x7f) && !lc_text_printable(0x9b) && !lc_text_printable(-1));

    char b[64];
    lc_text_escape(b, sizeof b, "a\nb\x1b]0;t\x07\xc2\x9b\xff\xc3\xa9\\");
    CHECK_EQ_STR(b, "a\\nb\\x1b]0;t\\x07\\xc2\\x9b\\xff\xc3\xa9\\");
    /* cut at a whole character (an escape is never split) */
    CHECK_EQ_U64(lc_text_escape(b, 6, "ab\x1b"), 2);
    CHECK_EQ_STR(b, "ab");

    char j[128] = "";
    lc_text_json("q\"\\\n\t\x1b\xc2\x9b\xff\xc3\xa9", json_put, j);
    CHECK_EQ_STR(j, "q\\\"\\\\\\n\\t\\u001b\\u009b\\\\xff\xc3\xa9");
}

int main(void)
{
    test_escape();
    test_expand_env();
    test_basename();
    test_has_suffix();
    test_parse_bytes();
    test_format_bytes();
    return check_finish();
}
