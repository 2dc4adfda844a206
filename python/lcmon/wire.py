"""The wire of lcmon's monitoring socket: framing and the protobuf codec.

Every message on the socket (proto/monitor.proto in lcmon's sources) is a
4-byte little-endian length, then a protobuf message: a ClientMessage from
the client, a ServerMessage from the loader. The messages a client needs
are described in SCHEMA (their fields) and ENUMS (the enums' names in
number order), and coded here with the standard library alone; no protobuf
package is needed. lcmon.Control (control.py) is the client that speaks it.

    body = encode("ClientMessage", {"control": {"command": "anchor-get"},
                                    "request_id": 1})
    sock.sendall(frame(body))
    ...
    body = unframe(buf)                  # None until a whole frame is in
    msg = decode("ServerMessage", body)  # dicts of the fields present

SCHEMA is checked against the .proto files by tests/python/test_control.py
(every message's fields), ENUMS and WINDOWS by tests/python/test_enums.py
(every enum's names and numbers, against the proto's and the C code's).
"""

import struct
from typing import Any, Dict, Optional, Tuple

from .errors import ProtocolError

__all__ = [
    "PROTOCOL_VERSION",
    "MAX_FRAME",
    "WINDOWS",
    "ENUMS",
    "SCHEMA",
    "RunId",
    "encode",
    "decode",
    "frame",
    "unframe",
]

# The version the loader's hello says (LC_PROTOCOL_VERSION in
# src/monitor/wire.h); a client speaks one. 3: ControlRequest is the
# command form alone (the older request messages were dropped).
PROTOCOL_VERSION = 3
MAX_FRAME = 4 << 20  # the loader refuses longer frames, and so does a client

# The windows of time metrics are kept over (Control.metrics(window=...)),
# as `lcmon ctl SOCKET metrics --window` names them; MetricWindow's order.
WINDOWS = ("1s", "10s", "1m", "10m", "1h", "all")

# ---- the messages, as proto/*.proto declares them ---------------------------
#
# message -> {field number: (name, type, repeated)}; a type is a scalar
# ("uint64", "int64", "uint32", "bool", "string", "double"; "runid": a uint64
# that prints in hex, RunId), "enum:NAME" or a message's name. Only what a
# client sends or reads is here: a field the loader sends that is not in its
# message's table is skipped by decode().

ENUMS = {
    "PipelineState": ["PIPELINE_STARTING", "PIPELINE_RUNNING", "PIPELINE_PAUSED",
                      "PIPELINE_STOPPING", "PIPELINE_STOPPED", "PIPELINE_FAILED",
                      "PIPELINE_FINISHED"],
    "StageState": ["STAGE_IDLE", "STAGE_RUNNING", "STAGE_PAUSED", "STAGE_FINISHED",
                   "STAGE_STOPPED"],
    "CountKind": ["COUNT_WORK", "COUNT_BAD_INPUT", "COUNT_DROP"],
    "MetricRole": ["ROLE_NONE", "ROLE_POSITIONS", "ROLE_ROWS", "ROLE_READER_CONNECTED",
                   "ROLE_READER_WAITING", "ROLE_WINDOW_FILL", "ROLE_ANCHOR_COUNT", "ROLE_ANCHOR",
                   "ROLE_ANCHOR_FROM", "ROLE_NEWEST_KEY", "ROLE_RESERVOIR_FILL",
                   "ROLE_POSITION_AGE", "ROLE_POSITION_AGE_MAX"],
    "MetricWindow": ["WINDOW_1S", "WINDOW_10S", "WINDOW_1M", "WINDOW_10M", "WINDOW_1H",
                     "WINDOW_ALL"],
    "As": ["NONE", "TOTAL", "RATE", "FILL", "VALUE", "FLAG", "TEXT", "SHARE_OF_TIME",
           "PERCENT", "SINCE_ANCHOR"],
}

SCHEMA: Dict[str, Dict[int, Tuple[str, str, bool]]] = {
    "MetricDisplay": {
        1: ("metric", "string", False), 2: ("as", "enum:As", False),
        3: ("label", "string", False), 4: ("brief", "string", False),
        5: ("dim", "bool", False), 6: ("warn", "bool", False),
        7: ("nonzero_only", "bool", False), 8: ("eta", "bool", False),
        9: ("of", "string", False), 10: ("row", "string", False),
    },
    "StageDescription": {
        1: ("name", "string", False), 2: ("stage_type", "string", False),
        3: ("input", "string", False), 4: ("queue_name", "string", False),
        5: ("queue_capacity", "uint64", False), 6: ("item_type", "string", False),
        7: ("details", "MetricDisplay", True), 8: ("commands", "CommandDescription", True),
    },
    "CommandDescription": {
        1: ("name", "string", False), 2: ("args", "string", False),
        3: ("help", "string", False), 4: ("min_args", "uint32", False),
        5: ("max_args", "uint32", False), 6: ("one_stage", "bool", False),
    },
    "Hello": {
        1: ("protocol_version", "uint32", False), 2: ("lcmon_version", "string", False),
        3: ("stages", "StageDescription", True), 4: ("pid", "uint32", False),
        5: ("run_id", "runid", False), 6: ("seed", "uint64", False),
        7: ("config", "string", False), 8: ("commands", "CommandDescription", True),
    },
    "Subscribe": {
        1: ("interval_ms", "uint32", False), 2: ("log_after", "uint64", False),
        3: ("logs", "bool", False), 4: ("windows", "enum:MetricWindow", True),
    },
    "ClientMessage": {
        1: ("subscribe", "Subscribe", False), 2: ("control", "ControlRequest", False),
        3: ("request_id", "uint64", False),
    },
    "LogLine": {
        1: ("seq", "uint64", False), 2: ("wall_time", "double", False),
        3: ("level", "uint32", False), 4: ("thread", "string", False),
        5: ("text", "string", False),
    },
    "ServerMessage": {
        1: ("hello", "Hello", False), 2: ("last_second", "DataLoaderMetricsProto", False),
        3: ("all_time", "DataLoaderMetricsProto", False),
        4: ("control_response", "ControlResponse", False), 5: ("request_id", "uint64", False),
        6: ("log", "LogLine", True), 7: ("windows", "DataLoaderMetricsProto", True),
        8: ("refused", "string", False),
    },
    "ReplyField": {1: ("name", "string", False), 2: ("value", "string", False)},
    "StageControlResponse": {
        2: ("stage", "string", False), 3: ("ok", "bool", False), 4: ("error", "string", False),
        5: ("fields", "ReplyField", True),
    },
    "ControlRequest": {
        4: ("command", "string", False), 5: ("args", "string", True),
        6: ("stage", "string", False),
    },
    "ControlResponse": {
        1: ("ok", "bool", False), 2: ("error", "string", False),
        3: ("stage_responses", "StageControlResponse", True),
        4: ("message", "string", False),
    },
    "StatisticsProtoInt64": {
        1: ("min", "int64", False), 2: ("max", "int64", False), 3: ("sum", "int64", False),
        4: ("count", "uint64", False), 5: ("latest", "int64", False),
    },
    "StatisticsProtoDouble": {
        1: ("min", "double", False), 2: ("max", "double", False), 3: ("sum", "double", False),
        4: ("count", "uint64", False), 5: ("latest", "double", False),
    },
    "LoadMetricProto": {
        1: ("name", "string", False), 2: ("load_seconds", "double", False),
        3: ("total_seconds", "double", False), 4: ("threads", "uint32", False),
    },
    "QueueMetricProto": {
        1: ("name", "string", False), 2: ("put_count", "uint64", False),
        3: ("get_count", "uint64", False), 4: ("drop_count", "uint64", False),
        5: ("queue_fullness", "StatisticsProtoInt64", False),
        6: ("queue_capacity", "uint64", False), 7: ("item_type", "string", False),
        8: ("item_unit", "string", False),
    },
    "CountMetricProto": {
        1: ("name", "string", False), 2: ("count", "uint64", False),
        3: ("kind", "enum:CountKind", False), 4: ("unit", "string", False),
        5: ("role", "enum:MetricRole", False),
    },
    "GaugeMetricProto": {
        1: ("name", "string", False), 2: ("value", "int64", False),
        3: ("capacity", "int64", False), 4: ("unit", "string", False),
        5: ("role", "enum:MetricRole", False), 6: ("values", "StatisticsProtoInt64", False),
    },
    "TextMetricProto": {1: ("name", "string", False), 2: ("value", "string", False),
                        3: ("role", "enum:MetricRole", False)},
    "StatisticsMetricProto": {
        1: ("name", "string", False), 2: ("stats", "StatisticsProtoDouble", False),
        3: ("unit", "string", False),
    },
    "StageMetricProto": {
        1: ("name", "string", False), 2: ("stage_type", "string", False),
        3: ("load_metrics", "LoadMetricProto", True),
        4: ("queue_metrics", "QueueMetricProto", True),
        5: ("count_metrics", "CountMetricProto", True),
        11: ("gauge_metrics", "GaugeMetricProto", True),
        12: ("statistics_metrics", "StatisticsMetricProto", True),
        13: ("state", "enum:StageState", False), 14: ("items_out", "uint64", False),
        15: ("detail", "string", False), 16: ("warning", "string", False),
        18: ("item_unit", "string", False), 19: ("text_metrics", "TextMetricProto", True),
    },
    "MonitorSocketMetricsProto": {
        1: ("clients", "uint32", False), 2: ("connections", "uint64", False),
        3: ("refused", "uint64", False), 4: ("closed", "uint64", False),
    },
    "DataLoaderMetricsProto": {
        1: ("stage_metrics", "StageMetricProto", True),
        2: ("duration_seconds", "double", False), 3: ("uptime_seconds", "double", False),
        4: ("state", "enum:PipelineState", False), 5: ("sequence", "uint64", False),
        6: ("error", "string", False), 7: ("rank", "uint32", False),
        8: ("world_size", "uint32", False),
        9: ("monitor_socket", "MonitorSocketMetricsProto", False),
        10: ("run_id", "runid", False), 11: ("seed", "uint64", False),
        12: ("window", "enum:MetricWindow", False),
    },
}

_VARINT = ("uint64", "int64", "uint32", "bool", "runid")


class RunId(int):
    """A run's id: a number that prints as lcmon prints it everywhere (its
    log, `lcmon ctl status`, the screen): 16 hex digits."""

    def __repr__(self) -> str:
        return "%016x" % self

    __str__ = __repr__


def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode(message: str, value: Dict[str, Any]) -> bytes:
    """The protobuf bytes of a dict of the message's fields (by name)."""
    fields = {name: (num, typ, rep) for num, (name, typ, rep) in SCHEMA[message].items()}
    out = bytearray()
    for name, v in value.items():
        if v is None:
            continue
        if name not in fields:
            raise KeyError("%s has no field %r" % (message, name))
        num, typ, rep = fields[name]
        for item in (v if rep else [v]):
            if typ.startswith("enum:"):
                item = ENUMS[typ[5:]].index(item) if isinstance(item, str) else item
                out += _varint(num << 3) + _varint(item)
            elif typ in _VARINT:
                out += _varint(num << 3) + _varint(int(item))
            elif typ == "double":
                out += _varint(num << 3 | 1) + struct.pack("<d", item)
            elif typ == "string":
                b = item.encode("utf-8")
                out += _varint(num << 3 | 2) + _varint(len(b)) + b
            else:
                b = encode(typ, item)
                out += _varint(num << 3 | 2) + _varint(len(b)) + b
    return bytes(out)


def decode(message: str, data: bytes) -> Dict[str, Any]:
    """A dict of the fields present in data (enums by name; unknown fields
    skipped). Raises ProtocolError on malformed bytes."""
    fields = SCHEMA[message]
    out: Dict[str, Any] = {}
    pos, n = 0, len(data)

    def varint():
        nonlocal pos
        shift = v = 0
        while True:
            if pos >= n or shift > 63:
                raise ProtocolError("malformed %s: a varint runs off the end" % message)
            b = data[pos]
            pos += 1
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7

    while pos < n:
        key = varint()
        num, wire = key >> 3, key & 7
        if wire == 0:
            raw: Any = varint()
        elif wire == 1:
            if pos + 8 > n:
                raise ProtocolError("malformed %s: a 64-bit field runs off the end" % message)
            raw = data[pos:pos + 8]
            pos += 8
        elif wire == 2:
            length = varint()
            if pos + length > n:
                raise ProtocolError("malformed %s: a field runs off the end" % message)
            raw = data[pos:pos + length]
            pos += length
        elif wire == 5:
            raw = data[pos:pos + 4]
            pos += 4
        else:
            raise ProtocolError("malformed %s: wire type %d" % (message, wire))
        if num not in fields:
            continue
        name, typ, rep = fields[num]
        if typ.startswith("enum:"):
            names = ENUMS[typ[5:]]
            v: Any = names[raw] if isinstance(raw, int) and raw < len(names) else raw
        elif typ == "bool":
            v = bool(raw)
        elif typ == "int64":
            v = raw - (1 << 64) if raw >= 1 << 63 else raw
        elif typ in ("uint64", "uint32"):
            v = raw
        elif typ == "runid":
            v = RunId(raw)
        elif typ == "double":
            (v,) = struct.unpack("<d", raw)
        elif typ == "string":
            v = bytes(raw).decode("utf-8", "replace")
        else:
            v = decode(typ, bytes(raw))
        if rep:
            out.setdefault(name, []).append(v)
        else:
            out[name] = v
    return out


def frame(body: bytes) -> bytes:
    """A message's bytes as the socket carries them: its length first."""
    return struct.pack("<I", len(body)) + body


def unframe(buf: bytearray, where: str = "the socket") -> Optional[bytes]:
    """The body of the first whole frame in buf, which is taken out of buf;
    None while the frame is not whole. ProtocolError on a frame longer
    than MAX_FRAME (where: the socket's path, for the message)."""
    if len(buf) < 4:
        return None
    (n,) = struct.unpack_from("<I", buf, 0)
    if n > MAX_FRAME:
        raise ProtocolError("%s: a frame of %d bytes: not lcmon's socket?" % (where, n))
    if len(buf) < 4 + n:
        return None
    body = bytes(buf[4:4 + n])
    del buf[:4 + n]
    return body
