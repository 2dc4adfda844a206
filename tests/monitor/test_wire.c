/*
 * test_wire: the monitor layer without a socket server: the wire framing
 * (lc_wire_*: whole frames, every cut of one, the size limit, two frames in
 * one buffer, a buffer giving back what a large frame grew it to, reading
 * from a socket with a deadline and a peer that hangs up), the JSON output of `lcmon ctl ...
 * --json` and the metrics log (escaping, enums by name, unset fields left out, NaN as null), and
 * the common control requests against the monitor of a configuration that did not load (the answers
 * name the problem).
 */
#include "check.h"

#include "core/clock.h"
#include "app/json.h"
#include "monitor/local.h"
#include "monitor/wire.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void test_framing(void)
{
    Lcmon__ClientMessage m = LCMON__CLIENT_MESSAGE__INIT;
    Lcmon__Subscribe sub = LCMON__SUBSCRIBE__INIT;
    sub.has_interval_ms = true;
    sub.interval_ms = 250;
    m.subscribe = &sub;
    m.has_request_id = true;
    m.request_id = 77;
    lc_wire_buf b = {0};
    lc_wire_put_client(&b, &m);
    size_t body = lcmon__client_message__get_packed_size(&m);
    CHECK_EQ_U64(b.len, 4 + body);
    CHECK_EQ_U64(b.data[0] | b.data[1] << 8, body); /* little-endian length */
    /* Every cut of the frame asks for more; the whole frame parses back. */
    const uint8_t *frame;
    size_t len;
    for (size_t cut = 0; cut < b.len; cut++) {
        lc_wire_buf part = {.data = b.data, .len = cut};
        CHECK_EQ_INT(lc_wire_peek_frame(&part, &frame, &len), 0);
    }
    CHECK_EQ_INT(lc_wire_peek_frame(&b, &frame, &len), 1);
    CHECK_EQ_U64(len, body);
    Lcmon__ClientMessage *back = lcmon__client_message__unpack(NULL, len, frame);
    CHECK(back && back->subscribe && back->subscribe->interval_ms == 250 && back->request_id == 77);
    lcmon__client_message__free_unpacked(back, NULL);

    /* Two frames in one buffer: the second after consuming the first. */
    Lcmon__ClientMessage m2 = LCMON__CLIENT_MESSAGE__INIT;
    m2.has_request_id = true;
    m2.request_id = 78;
    lc_wire_put_client(&b, &m2);
    lc_wire_buf_consume(&b, 4 + body);
    CHECK_EQ_INT(lc_wire_peek_frame(&b, &frame, &len), 1);
    back = lcmon__client_message__unpack(NULL, len, frame);
    CHECK(back && back->request_id == 78 && !back->subscribe);
    lcmon__client_message__free_unpacked(back, NULL);
    lc_wire_buf_fini(&b);

    /* The limit: exactly LC_WIRE_MAX_FRAME waits for its bytes; one more is
     * refused from the header alone (no waiting for 4 GiB). */
    uint8_t hdr[4];
    for (int k = 0; k < 2; k++) {
        uint32_t n = LC_WIRE_MAX_FRAME + (uint32_t)k;
        for (int i = 0; i < 4; i++)
            hdr[i] = (uint8_t)(n >> (8 * i));
        lc_wire_buf h = {.data = hdr, .len = 4};
        CHECK_EQ_INT(lc_wire_peek_frame(&h, &frame, &len), k ? LC_EFORMAT : 0);
    }
    memset(hdr, 0xff, 4);
    lc_wire_buf h = {.data = hdr, .len = 4};
    CHECK_EQ_INT(lc_wire_peek_frame(&h, &frame, &len), LC_EFORMAT);
}

static void test_read_frame(void)
{
    int sv[2];
    CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    Lcmon__ServerMessage m = LCMON__SERVER_MESSAGE__INIT;
    m.has_request_id = true;
    m.request_id = 5;
    lc_wire_buf out = {0};
    lc_wire_put_server(&out, &m);
    CHECK_OK(lc_wire_write_all(sv[1], out.data, out.len, NULL));
    lc_wire_buf in = {0};
    const uint8_t *frame;
    size_t len;
    lc_error err = {0};
    CHECK_OK(lc_wire_read_frame(sv[0], &in, lc_now_ns() + 5000000000ull, &frame, &len, &err));
    Lcmon__ServerMessage *back = lcmon__server_message__unpack(NULL, len, frame);
    CHECK(back && back->request_id == 5);
    lcmon__server_message__free_unpacked(back, NULL);
    lc_wire_buf_consume(&in, 4 + len);
    /* Nothing more within the deadline: a timeout that says so. */
    uint64_t t0 = lc_now_ns();
    CHECK_EQ_INT(lc_wire_read_frame(sv[0], &in, t0 + 100000000u, &frame, &len, &err), -ETIMEDOUT);
    CHECK(strstr(err.msg, "no answer from the loader") != NULL);
    CHECK(lc_now_ns() - t0 >= 90000000u);
    /* Half a frame, then the peer hangs up. */
    CHECK_OK(lc_wire_write_all(sv[1], out.data, out.len - 1, NULL));
    close(sv[1]);
    CHECK_EQ_INT(lc_wire_read_frame(sv[0], &in, lc_now_ns() + 5000000000ull, &frame, &len, &err),
                 -ECONNRESET);
    CHECK(strstr(err.msg, "closed the connection") != NULL);
    close(sv[0]);
    lc_wire_buf_fini(&in);
    lc_wire_buf_fini(&out);
}

static char *json_of(const ProtobufCMessage *m)
{
    lc_wire_buf b = {0};
    lc_json_message(&b, m);
    lc_wire_buf_append(&b, "", 1);
    return (char *)b.data;
}

static void test_json(void)
{
    Lcmon__StageMetricProto s = LCMON__STAGE_METRIC_PROTO__INIT;
    s.name = "po\"ol\n\x01";
    s.has_state = true;
    s.state = LCMON__STAGE_STATE__STAGE_PAUSED;
    s.has_items_out = true;
    s.items_out = 18446744073709551615ull;
    Lcmon__CountMetricProto c = LCMON__COUNT_METRIC_PROTO__INIT, *cs[1] = {&c};
    c.name = "bad_records";
    c.has_count = true;
    c.count = 3;
    c.has_kind = true;
    c.kind = LCMON__COUNT_KIND__COUNT_BAD_INPUT;
    s.n_count_metrics = 1;
    s.count_metrics = cs;
    char *j = json_of(&s.base);
    CHECK_EQ_STR(j, "{\"name\":\"po\\\"ol\\n\\u0001\",\"count_metrics\":[{\"name\":\"bad_records\","
                    "\"count\":3,\"kind\":\"COUNT_BAD_INPUT\"}],\"state\":\"STAGE_PAUSED\","
                    "\"items_out\":18446744073709551615}");
    free(j);
    /* A NaN (an unknown value) is null, not a token JSON lacks. */
    Lcmon__StatisticsProtoDouble d = LCMON__STATISTICS_PROTO_DOUBLE__INIT;
    d.has_latest = true;
    d.latest = NAN;
    j = json_of(&d.base);
    CHECK_EQ_STR(j, "{\"latest\":null}");
    free(j);
}

static void test_requests_to_a_failed_configuration(void)
{
    lc_monitor *m = lc_monitor_failed_new("stages: missing\nseed: not a number", NULL);
    lc_error err = {0};
    CHECK(lc_monitor_pipeline(m, true, &err) < 0);
    CHECK(strstr(err.msg, "stages: missing") != NULL);
    CHECK(strstr(err.msg, "1 more problem") != NULL);
    lc_error_clear(&err);
    CHECK(lc_monitor_pause(m, "pool", true, &err) < 0);
    CHECK(err.msg[0] != '\0');
    lc_error_clear(&err);
    char *anchor = (char *)1;
    CHECK(lc_monitor_anchor(m, NULL, false, &anchor, NULL, &err) < 0);
    CHECK(err.msg[0] != '\0');
    lc_snapshot *snap = lc_monitor_metrics(m, false);
    CHECK(snap != NULL);
    if (snap) {
        CHECK_EQ_INT(lc_snapshot_msg(snap)->state, LCMON__PIPELINE_STATE__PIPELINE_FAILED);
        CHECK(strstr(lc_snapshot_msg(snap)->error, "stages: missing") != NULL);
    }
    lc_snapshot_unref(snap);
    CHECK_EQ_STR(lc_monitor_where(m), "in-process");
    lc_monitor_free(m);
}

/* A buffer that grew for a large frame gives its memory back once it is
 * drained (the server keeps its clients' buffers for as long as they stay),
 * and keeps what it holds when it is not. */
static void test_shrink(void)
{
    lc_wire_buf b = {0};
    static uint8_t big[1 << 20];
    memset(big + sizeof big - 100, 7, 100);
    lc_wire_buf_append(&b, big, sizeof big);
    CHECK(b.cap >= sizeof big);
    lc_wire_buf_shrink(&b, 65536); /* still full: nothing to give back */
    CHECK(b.cap >= sizeof big && b.len == sizeof big);
    lc_wire_buf_consume(&b, sizeof big - 100); /* 100 bytes left, the last ones */
    lc_wire_buf_shrink(&b, 65536);
    CHECK_EQ_U64(b.cap, 65536);
    CHECK_EQ_U64(b.len, 100);
    CHECK(b.data[0] == 7 && b.data[99] == 7); /* the tail of big, kept */
    lc_wire_buf_consume(&b, 100);
    lc_wire_buf_shrink(&b, 65536); /* no more than it may keep */
    CHECK_EQ_U64(b.cap, 65536);
    lc_wire_buf_append(&b, big, sizeof big);
    lc_wire_buf_consume(&b, sizeof big);
    lc_wire_buf_shrink(&b, 65536); /* drained: all of it goes */
    CHECK(b.data == NULL && b.cap == 0 && b.len == 0);
    lc_wire_buf_append(&b, "abc", 3); /* and it grows again from nothing */
    lc_wire_buf_shrink(&b, 65536);    /* small: kept as it is */
    CHECK(b.cap == 4096 && b.len == 3 && memcmp(b.data, "abc", 3) == 0);
    lc_wire_buf_fini(&b);
}

int main(void)
{
    lc_log_set_stderr(false);
    test_framing();
    test_shrink();
    test_read_frame();
    test_json();
    test_requests_to_a_failed_configuration();
    return check_finish();
}
