"""Control: the Python client of lcmon's monitoring socket.

A headless lcmon (`lcmon --no-ui --socket PATH`) serves its metrics and
takes control requests on a Unix socket (what `lcmon ctl` and `lcmon attach`
speak). Control gives a trainer the same from Python, with nothing but the
standard library:

    from lcmon import Control

    with Control("/tmp/lcmon.sock") as ctl:
        print(ctl.state(), ctl.anchor())            # "PIPELINE_RUNNING", ("game_000123.gz", 42)
        ctl.wait_for_new_chunks(1000, timeout=3600)  # block until 1000 new games
        key, counted = ctl.reset_anchor()            # anchor at the newest game
        m = ctl.metrics()                            # plain dicts: every stage's metrics
        ctl.command("anchor-set", key, stage="pool")  # any command of ctl.commands(), by name

The commands are the loader's (its hello lists them, with their arguments
and the stages that have them: commands()); anchor(), pause(), reload()
and the others are shorthands over command().

Errors are exceptions, each an lcmon.Error (lcmon.errors): ControlError
(the loader refused a request: its words), LoaderGone (no loader on the
socket, or it went away and did not come back in time), ProtocolError (the
socket is not lcmon's, or speaks another protocol version). A Control
reconnects by itself when the loader on its socket restarts (`ctl
stop`/`start` and a reload keep the connection; a new lcmon process on the
same socket is connected to again), within `reconnect` seconds. The loader
closes a connection that has no subscription and has been idle for 10 s
(it has few places); a Control left unused for a while simply connects
again before its next request.

The wire (proto/monitor.proto in lcmon's sources; framing and the
protobuf codec) is lcmon.wire's: no protobuf package is needed.
"""

import os
import select
import socket
import time
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from .errors import ControlError, LoaderGone, ProtocolError
# The codec's names stay importable from here, as before it had a module.
from .wire import (ENUMS, MAX_FRAME, PROTOCOL_VERSION, SCHEMA, WINDOWS, RunId,  # noqa: F401
                   decode, encode, frame, unframe)

__all__ = [
    "Control",
    "ControlError",
    "Fresh",
    "LoaderGone",
    "ProtocolError",
    "SCHEMA",
    "PROTOCOL_VERSION",
    "WINDOWS",
]


class Fresh(NamedTuple):
    """What a fresh request (Control.fresh) did: the games that arrived
    since the last one, now drawn first, and their ingest sequence numbers
    (first_seq to last_seq, 0 when none: a batch holds one of them when its
    freshness.newest_seq is at least first_seq), and the queued items
    dropped between the pool and the writer."""

    games: int
    first_seq: int
    last_seq: int
    dropped: int


# ---- the client -------------------------------------------------------------


class Control:
    """A connection to a headless lcmon's monitoring socket.

    path: the socket (`lcmon --no-ui --socket PATH`; the default pipeline
        serves lcmon.sock in its working directory).
    timeout: seconds a request or a connection may take (default 30).
    reconnect: seconds to keep trying when the loader goes away (it is
        restarting, or a new lcmon is starting on the socket); 0: fail at
        once with LoaderGone.

    Not thread-safe: one thread uses a Control.
    """

    def __init__(self, path, timeout: float = 30.0, reconnect: float = 30.0):
        self.path = os.fspath(path)
        self.timeout = timeout
        self.reconnect = reconnect
        self.hello: Dict[str, Any] = {}
        self.reconnects = 0
        self._sock: Optional[socket.socket] = None
        self._buf = bytearray()
        self._next_id = 1
        self._last_snapshot: Optional[Dict[str, Any]] = None
        self._used = 0.0  # when the connection last carried something
        self._connect(first=True)

    # -- connection ------------------------------------------------------

    def _connect(self, first: bool = False, counted: bool = True) -> None:
        deadline = time.monotonic() + (self.timeout if first else self.reconnect)
        last = None
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self.timeout)
            try:
                s.connect(self.path)
                self._sock = s
                self._buf = bytearray()
                msg = self._read_message(time.monotonic() + self.timeout)
                if "hello" not in msg:
                    raise ProtocolError("%s: the first message is not lcmon's hello" % self.path)
                self.hello = msg["hello"]
                v = self.hello.get("protocol_version")
                if v != PROTOCOL_VERSION:
                    raise ProtocolError(
                        "%s: lcmon %s speaks monitoring protocol %s; this package speaks %d "
                        "(use the Python package of that lcmon)"
                        % (self.path, self.hello.get("lcmon_version", "?"), v, PROTOCOL_VERSION))
                if not first and counted:
                    self.reconnects += 1
                self._used = time.monotonic()
                return
            except FileNotFoundError as e:
                last = "no such socket (is lcmon running with --socket %s?)" % self.path
                s.close()
                if first and not self.reconnect:
                    raise LoaderGone("%s: %s" % (self.path, last)) from e
            except ConnectionRefusedError:
                last = "nobody is listening (the loader is gone or restarting)"
                s.close()
            except (ProtocolError, ControlError, TimeoutError):
                self.close()  # connected, but no hello in time: not a restart
                raise
            except (OSError, LoaderGone) as e:
                last = str(e)
                s.close()
                self._sock = None
            if time.monotonic() >= deadline or (not first and not self.reconnect):
                raise LoaderGone("%s: %s" % (self.path, last))
            time.sleep(0.05)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # The loader closes a connection without a subscription that has been
    # idle this long (IDLE_LIMIT_NS in src/monitor/server.c).
    LOADER_IDLE_LIMIT = 10.0

    def _fresh(self) -> None:
        """Connect again if the connection sat unused for half the loader's
        idle limit: the loader may close it at any moment, even as a request
        is on its way. The same loader is not counted in reconnects."""
        if self._sock is None or time.monotonic() - self._used < self.LOADER_IDLE_LIMIT / 2:
            return
        pid = self.hello.get("pid")
        self.close()
        self._connect(counted=False)
        if self.hello.get("pid") != pid:  # a new loader came meanwhile
            self.reconnects += 1

    def _send(self, message: Dict[str, Any]) -> None:
        try:
            self._sock.sendall(frame(encode("ClientMessage", message)))
        except OSError as e:
            raise LoaderGone("%s: the loader went away (%s)" % (self.path, e)) from e
        self._used = time.monotonic()

    def _read_message(self, deadline: Optional[float]) -> Dict[str, Any]:
        while True:
            body = unframe(self._buf, self.path)
            if body is not None:
                msg = decode("ServerMessage", body)
                if "refused" in msg:  # its last message: every place is taken
                    raise LoaderGone("%s: the loader refused this connection: %s"
                                     % (self.path, msg["refused"]))
                return msg
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError("%s: no answer from the loader in %.1f s (is it stalled?)" %
                                   (self.path, self.timeout))
            try:
                r, _, _ = select.select([self._sock], [], [], left)
                if not r:
                    continue
                chunk = self._sock.recv(1 << 16)
            except OSError as e:
                raise LoaderGone("%s: the loader went away (%s)" % (self.path, e)) from e
            if not chunk:
                raise LoaderGone("%s: the loader closed the connection" % self.path)
            self._buf += chunk
            self._used = time.monotonic()

    def _note(self, msg: Dict[str, Any]) -> None:
        if "hello" in msg:  # again after a reload: the stages may have changed
            self.hello = msg["hello"]
        if "all_time" in msg or "last_second" in msg:
            self._last_snapshot = {k: msg[k] for k in ("last_second", "all_time") if k in msg}
            for w in msg.get("windows", []):
                name = w.get("window")
                if name in ENUMS["MetricWindow"]:
                    self._last_snapshot[WINDOWS[ENUMS["MetricWindow"].index(name)]] = w

    def _with_reconnect(self, fn):
        self._fresh()
        try:
            return fn()
        except LoaderGone:
            if not self.reconnect:
                raise
            self.close()
            self._connect()
            return fn()

    # -- requests --------------------------------------------------------

    def request(self, control: Dict[str, Any]) -> Dict[str, Any]:
        """Send a ControlRequest (a dict of its fields) and return the
        ControlResponse; ControlError when the loader refuses it."""

        def once():
            rid = self._next_id
            self._next_id += 1
            self._send({"control": control, "request_id": rid})
            deadline = time.monotonic() + self.timeout
            while True:
                msg = self._read_message(deadline)
                self._note(msg)
                if msg.get("request_id") == rid and "control_response" in msg:
                    return msg["control_response"]

        resp = self._with_reconnect(once)
        if resp.get("ok", True) is False:
            raise ControlError(resp.get("error") or "the loader refused the request")
        for sr in resp.get("stage_responses", []):
            if sr.get("ok", True) is False:
                raise ControlError("stage %s: %s" % (sr.get("stage", "?"), sr.get("error", "")))
        return resp

    def commands(self) -> Dict[str, Dict[str, Any]]:
        """The commands the loader answers, from its hello (the rows of its
        command tables, as `lcmon ctl SOCKET help` lists them): name ->
        {"args" (usage: "KEY", "" for none), "help", "min_args",
        "max_args", "one_stage" (for one named stage only, as pause),
        "stages" (the stages that have it; [] for the loader's own: stop,
        start, restart, reload)}."""
        out: Dict[str, Dict[str, Any]] = {}

        def add(c: Dict[str, Any], stage: Optional[str]) -> None:
            row = out.setdefault(c.get("name", ""), {
                "args": c.get("args", ""), "help": c.get("help", ""),
                "min_args": c.get("min_args", 0), "max_args": c.get("max_args", 0),
                "one_stage": c.get("one_stage", False), "stages": []})
            if stage is not None:
                row["stages"].append(stage)

        for c in self.hello.get("commands", []):
            add(c, None)
        for s in self.hello.get("stages", []):
            for c in s.get("commands", []):
                add(c, s.get("name", ""))
        return out

    def command(self, name: str, *args: str, stage: Optional[str] = None) -> Dict[str, Any]:
        """Run one of the loader's commands by name (see commands()), as
        `lcmon ctl SOCKET NAME [--stage STAGE] ARGS...` does: a stage's
        command goes to `stage`, or to every stage that has it. Returns
        {"message": what the loader said it did ("" for nothing more than
        done), "replies": {stage: {field: value}} for each stage that ran
        it, in pipeline order}. ControlError with the loader's words when it
        refuses (no such command or stage, wrong arguments, ...)."""
        resp = self.request({"command": name, "args": [str(a) for a in args],
                             "stage": stage})
        replies = {}
        for sr in resp.get("stage_responses", []):
            replies[sr.get("stage", "")] = {f.get("name", ""): f.get("value", "")
                                            for f in sr.get("fields", [])}
        return {"message": resp.get("message", ""), "replies": replies}

    def _anchor(self, name: str, *args: str) -> Tuple[str, int]:
        for fields in self.command(name, *args)["replies"].values():
            if "anchor" in fields:
                return fields["anchor"], int(fields.get("count", 0))
        raise ControlError("no stage of this pipeline keeps an anchor (no shuffling_chunk_pool)")

    def anchor(self) -> Tuple[str, int]:
        """(anchor key, chunks since the anchor): the command anchor-get."""
        return self._anchor("anchor-get")

    def set_anchor(self, key: str, recount: bool = False) -> Tuple[str, int]:
        """Anchor at key (a file's sort key, as anchor() gives it); the count
        stays (it restarts at the pipeline's next start), as upstream's.
        recount=True counts again instead: the window's games after key
        (exact when key's game is in the window; refused with sharding).
        Returns (key, count). The command anchor-set (anchor-recount)."""
        return self._anchor("anchor-recount" if recount else "anchor-set", key)

    def reset_anchor(self) -> Tuple[str, int]:
        """Anchor at the newest game and zero the count; returns (the new
        key, the count it had). ControlError until the pool's initial load
        is counted, and while no game has arrived: once one is taken, the
        initial load's games are in the count it returned, not after it.
        The command anchor-reset."""
        return self._anchor("anchor-reset")

    def fresh(self, stage: Optional[str] = None) -> "Fresh":
        """Ask for the games that arrived since the last fresh() (the first:
        since the pool's initial load, or the games it counted since an
        anchor) to reach the trainer now: the pool draws them before any
        other, the items queued between the pool and the writer are dropped,
        and the first position of each such game goes around the shuffle
        reservoir, so the batch after the one being written holds one
        position of each (docs/performance.md, "Freshness", has the
        numbers). Returns a Fresh: how many games, their ingest sequence
        numbers (compare Batch.freshness.newest_seq) and the items dropped.
        When no game arrived since the last request nothing is dropped; a
        request with new games drops, with the rest, what an earlier one
        brought and the trainer has not read yet. With several pools, name
        one (stage=). The command fresh."""
        replies = self.command("fresh", stage=stage)["replies"]
        for fields in replies.values():
            if "games" in fields:
                return Fresh(*(int(fields.get(k, 0)) for k in Fresh._fields))
        raise ControlError("no stage of this pipeline has a fresh lane (no shuffling_chunk_pool)")

    def pause(self, stage: str) -> None:
        self.command("pause", stage=stage)

    def resume(self, stage: str) -> None:
        self.command("resume", stage=stage)

    def stop(self) -> None:
        """Stop the pipeline (the process stays; start() runs it again)."""
        self.command("stop")

    def start(self) -> None:
        self.command("start")

    def restart(self) -> None:
        self.command("restart")

    def reload(self) -> str:
        """Read the loader's configuration file again and, when it checks out
        (as `lcmon --check-config` checks), restart the pipeline with it:
        the pool's anchor and the pipe's reader are kept (a BatchReader
        follows to the new run). Returns what was loaded ("reloaded PATH: 8
        stages"); hello and stages() describe the new pipeline. ControlError
        with every problem, one a line, when it does not check out: nothing
        changed then. Same as `lcmon ctl SOCKET reload`."""
        said = self.command("reload")["message"]
        # The loader sends every client its new hello right after the reply.
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read_message(deadline)
            self._note(msg)
            if "hello" in msg:
                break
        return said or "reloaded"

    # -- metrics ---------------------------------------------------------

    def _snapshot(self, interval_ms: int, deadline: Optional[float],
                  window: Optional[str] = None) -> Dict[str, Any]:
        extra = window not in (None, "1s", "all")
        sub: Dict[str, Any] = {"interval_ms": interval_ms}
        if extra:
            sub["windows"] = [WINDOWS.index(window)]

        def once():
            self._send({"subscribe": sub})
            without = 0  # snapshots without the window (some left before we asked)
            while True:
                msg = self._read_message(deadline)
                self._note(msg)
                if "all_time" in msg:
                    if extra and window not in self._last_snapshot:
                        without += 1
                        if without < 5:
                            continue
                        raise ControlError("%s: the loader sends no metric windows (an lcmon "
                                           "older than windows): only last_second and "
                                           "all_time" % self.path)
                    return self._last_snapshot

        return self._with_reconnect(once)

    def metrics(self, window: Optional[str] = None) -> Dict[str, Any]:
        """A snapshot: {"last_second": ..., "all_time": ...}, each a dict of
        DataLoaderMetricsProto's fields (proto/training_metrics.proto):
        "state", "stage_metrics" (a list of dicts: "name", "count_metrics",
        "gauge_metrics" (with "values": their minimum, maximum, sum and
        count over the window), "statistics_metrics", "load_metrics",
        "queue_metrics", ... with their units), "duration_seconds" (what the
        window covers: rates are counts over it), "uptime_seconds", "rank",
        "world_size", ...

        window: one of WINDOWS ("1s", "10s", "1m", "10m", "1h", "all"): the
        snapshot also has "window", that window's (as `lcmon ctl SOCKET
        metrics --window NAME` shows it). ValueError for another name."""
        if window is not None and window not in WINDOWS:
            raise ValueError("window %r: no such window (the windows: %s)" %
                             (window, ", ".join(WINDOWS)))
        snap = self._snapshot(50, time.monotonic() + self.timeout, window)
        self._send({"subscribe": {"interval_ms": 0}})
        if window is None:
            return {k: snap[k] for k in ("last_second", "all_time") if k in snap}
        named = {"1s": "last_second", "all": "all_time"}.get(window, window)
        out = {k: snap[k] for k in ("last_second", "all_time") if k in snap}
        out["window"] = snap[named]
        return out

    def run(self) -> Dict[str, Any]:
        """The run the loader is on: {"run_id" (the batch stream's header
        names it too; new at every start), "seed", "rank", "world_size",
        "state", "lcmon_version" (the loader's, from its hello)}."""
        m = self.metrics()["all_time"]
        return {
            "lcmon_version": self.hello.get("lcmon_version", ""),
            "run_id": m.get("run_id", RunId(0)),
            "seed": m.get("seed", 0),
            "rank": m.get("rank", 0),
            "world_size": m.get("world_size", 1),
            "state": m.get("state", "PIPELINE_STARTING"),
        }

    def state(self) -> str:
        """The pipeline's state: "PIPELINE_RUNNING", "PIPELINE_STOPPED", ..."""
        return self.metrics()["all_time"].get("state", "PIPELINE_STARTING")

    def stages(self) -> List[str]:
        """The stages' names, in pipeline order (from the hello)."""
        return [s.get("name", "") for s in self.hello.get("stages", [])]

    @staticmethod
    def find(snapshot_part: Dict[str, Any], stage: str, kind: str, name: str):
        """A metric's entry in one half of a snapshot: find(m["all_time"],
        "pool", "gauge_metrics", "chunks_since_anchor"); None if absent."""
        for s in snapshot_part.get("stage_metrics", []):
            if s.get("name") == stage:
                for e in s.get(kind, []):
                    if e.get("name") == name:
                        return e
        return None

    def new_chunks(self, snapshot: Optional[Dict[str, Any]] = None) -> int:
        """Chunks since the anchor, as the pool last reported them."""
        snap = snapshot or self.metrics()
        for s in snap.get("all_time", {}).get("stage_metrics", []):
            for g in s.get("gauge_metrics", []):
                if g.get("role") == "ROLE_ANCHOR_COUNT":
                    return g.get("value", 0)
        raise ControlError("no stage of this pipeline counts chunks since an anchor")

    def wait_for_new_chunks(self, n: int, timeout: Optional[float] = None,
                            interval: float = 0.05) -> int:
        """Block until the pool has counted at least n chunks since the
        anchor; returns the count. The pool's live count (the anchor query,
        not the once-a-second metrics) is asked every `interval` seconds, a
        request of a few bytes the loader answers under its pool's lock: the count
        is seen within `interval` of the chunk that completes it. Raises
        TimeoutError after `timeout` seconds (None: for ever). Survives
        loader restarts (the count then starts again with the new
        pipeline)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            _, count = self.anchor()
            if count >= n:
                return count
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise TimeoutError("%s: %d new chunks did not arrive in %.1f s (%d so far)" %
                                   (self.path, n, timeout, count))
            time.sleep(interval if deadline is None else max(0.0, min(interval, deadline - now)))
