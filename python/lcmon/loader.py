"""Loader: start lcmon from Python, read its batches, steer it, stop it.

    import lcmon

    with lcmon.Loader("my-run.yaml") as loader:          # a path, YAML text or a dict
        loader.control.wait_for_new_chunks(5000)
        for batch in loader.batches():                   # dicts of numpy arrays
            ...                                          # views: valid until the next batch
        # or: for batch in loader.dataset(device="cuda"): ...   (torch)

Reading. Every fifo_writer of the config is an output, named as its stage
(`loader.outputs`; config/train_test.yaml's "train" and "test", and an
upstream config's output aliases, which `lcmon convert-config` makes the
writers' names). batches(), get() and maybe_next() read one (the only one
when the config has one; else name it: loader.batches("test")) through the
Loader's reader of that output, which they share. As upstream's
DataLoader: get() is the next batch (get_next()), maybe_next() the next
batch if one is ready, else None at once (maybe_get_next()); neither closes
the reader. Packed batches (`packed: true`) cross the pipe packed and come
out expanded, the dense layout's arrays (expand=False: the packed ones).
The arrays are views that the next batch overwrites; copy=True (to get(),
maybe_next() or batches()) gives arrays of the caller's own, as upstream's
get_next() does.

The loader runs `lcmon --no-ui` (in this process's working directory, so
that a config's relative paths mean what they say) with a private named
pipe and monitoring socket, and is stopped when the `with` block ends
(close()). lcmon lives exactly as long as this Python process, whichever
thread made the Loader: it watches its stdin (`--parent-fd 0`), a pipe whose
write end only this process holds, and stops as on SIGTERM when the kernel
closes it, however the process dies (even by SIGKILL). Processes forked from
this one (DataLoader workers, multiprocessing) let go of that pipe at once,
and the Loader belongs to the process that made it: only there does close()
stop lcmon. lcmon runs in a session of its own, so a Ctrl-C at the terminal
reaches the trainer, whose close() (or exit) stops lcmon once. A Loader
dropped, or left open when the interpreter exits, is closed then.

lcmon's log goes where `log` says: a file path, or (the default) Python's
logging module, logger "lcmon.loader".

When lcmon dies (a crash, SIGKILL, any exit) while a read of the Loader
waits (batches(), dataset(); every read path passes the reader the
Loader's watch hook), the read raises LoaderGone with lcmon's exit status
and its last log lines within a fraction of a second. A read that has
waited `stall_warning` seconds for a live lcmon logs a warning (logger
"lcmon.loader") with lcmon's state from its socket, every stall_warning
seconds of the wait: a stalled loader is not silent.

The private folder (tempfile's directory, lcmon-loader-*) holds the pipe,
the socket and a config given as text or a dict. Its `lock` file is locked
(flock) by this process and by lcmon as long as either lives; a Loader
removes the folders of earlier ones whose lock nobody holds any more (a
trainer killed before close()), never one that a live process holds.

The pipes: a config given as a dict gets a private pipe as each
fifo_writer's path; YAML text and files get one for each ${LCMON_PIPE} and
${LCMON_<NAME>_PIPE} they use (as the default pipeline and the shipped
configs name their pipes: config/train_test.yaml's LCMON_TRAIN_PIPE and
LCMON_TEST_PIPE). A writer with a path of its own is read there (lcmon
runs in this process's working directory).

A config lcmon refuses raises LoaderError with lcmon's own text (every
error, with its line and column).
"""

import fcntl
import json
import logging
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import weakref
from typing import Any, Dict, List, Optional, Union

from .control import Control
from .errors import LoaderError, LoaderGone
from .stream import BatchReader

__all__ = ["Loader", "LoaderError", "LoaderGone", "find_lcmon"]

log = logging.getLogger("lcmon.loader")
_LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} (error|warn|info|debug) +(.*)$")

_FOLDER_PREFIX = "lcmon-loader-"
_LOCK = "lock"  # in the folder: flocked by its Loader's process and its lcmon


# Written by python/setup.py into the installed package (never into the
# source tree): the build directory of the source tree it was installed
# from, where scripts/setup builds lcmon.
_BUILD_DIR_FILE = "BUILD_DIR"


def build_dirs() -> list:
    """The source tree's build directories: beside this package in the tree
    (PYTHONPATH=python; LCMON_BUILD names it, default build), and the one of
    the tree it was installed from."""
    here = os.path.dirname(os.path.abspath(__file__))
    places = [os.path.join(here, "..", "..", os.environ.get("LCMON_BUILD") or "build")]
    try:
        with open(os.path.join(here, _BUILD_DIR_FILE)) as f:
            places.append(f.read().strip())
    except OSError:
        pass
    return [os.path.normpath(p) for p in places if p]


def _built_here() -> list:
    """Where the source tree's build puts lcmon."""
    return [os.path.join(p, "lcmon") for p in build_dirs()]


def find_lcmon() -> str:
    """The lcmon executable: $LCMON, else `lcmon` on PATH, else the build of
    the source tree this package sits in or was installed from (where
    scripts/setup builds it)."""
    exe = os.environ.get("LCMON")
    if exe:
        return exe
    found = shutil.which("lcmon")
    if found:
        return found
    places = _built_here()
    for built in places:
        if os.access(built, os.X_OK):
            return built
    raise LoaderError(
        "cannot find lcmon: not on PATH, and not built at %s; build it with scripts/setup in "
        "lcmon's source tree (then install this package from that tree), or set LCMON to the "
        "executable" % " or ".join(places))


# A pipe a YAML config takes from the environment: ${LCMON_PIPE} or
# ${LCMON_<NAME>_PIPE}, with or without a default.
_PIPE_VAR = re.compile(r"\$\{(LCMON(?:_([A-Z0-9]+(?:_[A-Z0-9]+)*))?_PIPE)(?::-[^}]*)?\}")


def _hold_folder(folder: str) -> int:
    """Lock the folder's lock file for this process (and the lcmon it will
    pass the descriptor to): the descriptor. The file is locked before it
    gets its name, so no sweep ever sees it unlocked."""
    tmp = os.path.join(folder, _LOCK + ".new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, b"%d\n" % os.getpid())
        os.rename(tmp, os.path.join(folder, _LOCK))
    except BaseException:
        os.close(fd)
        raise
    return fd


def _sweep_folders(parent: str) -> None:
    """Remove the private folders of Loaders whose process and lcmon are
    both gone (their lock is free): what a trainer killed before close()
    left. A folder without a lock file (being made, or not a Loader's) and
    one whose lock is held are left alone."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(_FOLDER_PREFIX)]
    except OSError:
        return
    for name in names:
        folder = os.path.join(parent, name)
        try:
            st = os.lstat(folder)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                continue
            fd = os.open(os.path.join(folder, _LOCK), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # held: its process or its lcmon lives
            continue
        try:
            log.info("removing %s, left by a process that ended without closing its Loader",
                     folder)
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(fd)


# The Loaders of this process: a forked child lets go of their lifetime pipe
# and folder lock at once (it does not own them; os.register_at_fork).
_loaders: "weakref.WeakSet[Loader]" = weakref.WeakSet()


def _let_go_in_child() -> None:
    for loader in list(_loaders):
        fds = [loader._lock_fd]
        try:
            fds.append(loader.proc.stdin.fileno())
        except (AttributeError, ValueError):  # not started, or closed
            pass
        null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        for fd in fds:
            if fd >= 0:
                os.dup2(null, fd, inheritable=False)  # the number stays valid, on /dev/null
        os.close(null)


os.register_at_fork(after_in_child=_let_go_in_child)


def _stop(owner: int, proc: Optional[subprocess.Popen], folder: str, lock_fd: int,
          timeout: float) -> Optional[int]:
    """Stop lcmon (SIGINT, then SIGKILL after timeout seconds) and remove
    the folder: lcmon's exit status. Nothing in a forked child (owner is the
    process that made the Loader). Also weakref.finalize's, for a Loader
    dropped or left open at exit."""
    if os.getpid() != owner:
        return None
    rc = None
    if proc is not None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        rc = proc.returncode
        if proc.stdin is not None:
            proc.stdin.close()
    shutil.rmtree(folder, ignore_errors=True)
    if lock_fd >= 0:
        os.close(lock_fd)  # last: no sweep takes the folder while it is removed
    return rc


def _stage_line(stage: Dict[str, Any], texts: Dict[str, List[str]]) -> str:
    """One stage of a metrics snapshot, for the stall warning; with the
    texts its screen shows (the hello's TEXT displays, by stage: what a
    folder's watcher is doing, where a join's items came from)."""
    parts = [stage.get("state", "?").replace("STAGE_", "").lower(),
             "%d %s/s out" % (stage.get("items_out", 0), stage.get("item_unit", "items"))]
    for q in stage.get("queue_metrics", []):
        parts.append("queue %d/%d" % (q.get("queue_fullness", {}).get("latest", 0),
                                      q.get("queue_capacity", 0)))
    shown = texts.get(stage.get("name", ""), [])
    for t in stage.get("text_metrics", []):
        if t.get("name") in shown and t.get("value"):
            parts.append(t["value"])
    return "%s: %s" % (stage.get("name", "?"), ", ".join(parts))


def _with_pipe(config: Dict[str, Any], pipe: str) -> Dict[str, Any]:
    """A copy of a config dict whose fifo_writer writes to pipe; with
    several writers, each to its own pipe beside it, named after its
    stage."""
    config = json.loads(json.dumps(config))
    stages = [s for s in config.get("stages", [])
              if isinstance(s, dict) and isinstance(s.get("fifo_writer"), dict)]
    if len(stages) == 1:
        stages[0]["fifo_writer"]["path"] = pipe
    for k, s in enumerate(stages if len(stages) > 1 else []):
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(s.get("name") or "output%d" % k))
        s["fifo_writer"]["path"] = os.path.join(os.path.dirname(pipe), name + ".pipe")
    return config


class Loader:
    """A headless lcmon run by this process.

    config: a path to a YAML file, YAML text, or a dict (as the YAML would
        read).
    pipe: the pipe of a config with one writer: a dict's writer path and
        ${LCMON_PIPE} (default: a private one, see above). Each output is
        read where its writer writes, whatever this says.
    log: a file path for lcmon's log, or None for Python's logging.
    lcmon: the executable (default: find_lcmon()).
    args: more command-line arguments for lcmon (["--log-level", "debug"]).
    env: more environment variables for lcmon (LCMON_DATA, RANK, ...).
    start_timeout: seconds to wait for lcmon to come up (its socket and
        every output's pipe).
    anchor: the key a checkpoint saved (lcmon --anchor KEY): the pool's
        initial load counts the games after it, as upstream's daemon sets
        its anchor before the start; a resume waits for exactly the games
        that came since.
    stall_warning: seconds a read may wait for a live lcmon before a warning
        with lcmon's state is logged (again every as many seconds of the
        wait); 0 or None: never.

    `outputs` names the outputs (the fifo_writer stages, in pipeline
    order) and `pipes` gives each one's pipe; `pipe` is the first's.
    """

    def __init__(
        self,
        config: Union[str, os.PathLike, Dict[str, Any]],
        pipe: Optional[str] = None,
        log: Optional[str] = None,
        lcmon: Optional[str] = None,
        args=(),
        env: Optional[Dict[str, str]] = None,
        start_timeout: float = 60.0,
        anchor: Optional[str] = None,
        stall_warning: Optional[float] = 60.0,
    ):
        self._owner = os.getpid()
        self._lock_fd = -1
        self.proc: Optional[subprocess.Popen] = None
        self.control: Optional[Control] = None
        self.outputs: List[str] = []
        self.pipes: Dict[str, str] = {}
        self._readers: Dict[str, BatchReader] = {}
        self._reader_kwargs: Dict[str, Dict[str, Any]] = {}
        self._cwd = os.getcwd()
        self.stall_warning = stall_warning
        self._stall_next = stall_warning
        self._log_thread = None
        self._log_file = None
        self._stderr_tail = []
        _sweep_folders(tempfile.gettempdir())
        self.dir = tempfile.mkdtemp(prefix=_FOLDER_PREFIX)
        self.socket = os.path.join(self.dir, "lcmon.sock")
        self.pipe = pipe or os.path.join(self.dir, "lcmon.pipe")
        self._closing = False
        try:
            self._lock_fd = _hold_folder(self.dir)
            _loaders.add(self)
            self._start(config, log, lcmon, args, env, anchor)
            self._wait_up(start_timeout)
        except BaseException:
            self.close()
            raise

    def _start(self, config, log_path, lcmon, args, env, anchor) -> None:
        cfg_path = self._write_config(config)
        cmd = [lcmon or find_lcmon(), "--no-ui", "--status-interval", "0",
               "--config", cfg_path, "--socket", self.socket, "--parent-fd", "0", *args]
        if anchor:
            cmd += ["--anchor", anchor]
        child_env = dict(os.environ)
        child_env["LCMON_PIPE"] = self.pipe
        child_env.update(self._private_pipes(config))
        child_env.update(env or {})
        if log_path is not None:
            self._log_file = open(log_path, "a")
            stderr = self._log_file
        else:
            stderr = subprocess.PIPE
        # stdin: the lifetime pipe (--parent-fd 0); the lock's descriptor
        # goes to lcmon too, so the folder stays locked while lcmon lives.
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr,
            env=child_env, pass_fds=(self._lock_fd,), start_new_session=True, text=True,
        )
        self._finalizer = weakref.finalize(self, _stop, self._owner, self.proc, self.dir,
                                           self._lock_fd, 30.0)
        if log_path is None:
            self._log_thread = threading.Thread(target=self._forward_log, daemon=True,
                                                name="lcmon-log")
            self._log_thread.start()

    def _write_config(self, config) -> str:
        if isinstance(config, dict):
            text = json.dumps(_with_pipe(config, self.pipe))  # JSON is YAML
        elif isinstance(config, os.PathLike) or (
                isinstance(config, str) and "\n" not in config and os.path.exists(config)):
            return os.path.abspath(os.fspath(config))
        elif isinstance(config, str):
            text = config
        else:
            raise TypeError("config: a path, YAML text or a dict, not %r" % type(config))
        path = os.path.join(self.dir, "config.yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def _private_pipes(self, config) -> Dict[str, str]:
        """A private pipe for each ${LCMON_<NAME>_PIPE} a YAML config uses."""
        if isinstance(config, dict):
            return {}
        text = config
        if isinstance(config, os.PathLike) or "\n" not in config:
            try:
                with open(config, errors="replace") as f:
                    text = f.read()
            except OSError:
                return {}  # lcmon says what is wrong with it
        return {m.group(1): os.path.join(self.dir, (m.group(2) or "lcmon").lower() + ".pipe")
                for m in _PIPE_VAR.finditer(text) if m.group(1) != "LCMON_PIPE"}

    def _forward_log(self) -> None:
        # "HH:MM:SS.mmm level [thread] message": logging adds its own time
        # and level, so the record is "[thread] message" at that level.
        levels = {"error": logging.ERROR, "warn": logging.WARNING, "info": logging.INFO,
                  "debug": logging.DEBUG}
        for line in self.proc.stderr:
            line = line.rstrip("\n")
            self._stderr_tail = (self._stderr_tail + [line])[-200:]
            m = _LOG_LINE.match(line)
            level, text = (levels[m.group(1)], m.group(2)) if m else (logging.INFO, line)
            if self._closing and text == "[main] Interrupt received: stopping":
                text = "[main] stopping: Loader.close()"  # its SIGINT, not a user's
            log.log(level, "%s", text)

    def _wait_up(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.socket):
            self._check_up(deadline, timeout, "socket %s" % self.socket)
            time.sleep(0.02)
        self.control = Control(self.socket, timeout=max(1.0, deadline - time.monotonic()))
        self._find_outputs(deadline, timeout)

    def _check_up(self, deadline: float, timeout: float, what: str) -> None:
        if self.proc.poll() is not None:
            self._died("lcmon exited with status %d before it was up" % self.proc.returncode)
        if time.monotonic() > deadline:
            raise LoaderError("lcmon was not up after %.0f s (no %s)" % (timeout, what))

    def _find_outputs(self, deadline: float, timeout: float) -> None:
        """The outputs: every fifo_writer (from the loader's hello) and its
        pipe (from its metrics), once lcmon has made them all."""
        names = [s.get("name", "") for s in self.control.hello.get("stages", [])
                 if s.get("stage_type") == "fifo_writer"]
        pipes: Dict[str, str] = {}
        while len(pipes) < len(names):
            for s in self.control.metrics()["all_time"].get("stage_metrics", []):
                if s.get("name") in names and s.get("detail"):
                    pipes[s["name"]] = os.path.join(self._cwd, s["detail"])
            if len(pipes) < len(names):
                self._check_up(deadline, timeout, "pipe named by the writers %s yet" %
                               ", ".join(sorted(set(names) - set(pipes))))
                time.sleep(0.02)
        for name in names:
            while not os.path.exists(pipes[name]):
                self._check_up(deadline, timeout, "pipe %s (output %r)" % (pipes[name], name))
                time.sleep(0.02)
        self.outputs = names
        self.pipes = {n: pipes[n] for n in names}
        if names:
            self.pipe = self.pipes[names[0]]

    def _log_tail(self, lines: int = 40) -> str:
        """lcmon's last log lines (all of them once it has exited)."""
        if self._log_file is not None:
            try:
                with open(self._log_file.name, "rb") as f:
                    f.seek(max(0, os.fstat(f.fileno()).st_size - 16384))
                    text = f.read().decode("utf-8", "replace").splitlines()[-lines:]
            except OSError as e:
                return "(its log %s cannot be read: %s)" % (self._log_file.name, e)
            return "\n".join(["(from %s)" % self._log_file.name] + text)
        if self._log_thread is not None:
            self._log_thread.join(1.0)  # its stderr ends with it: the last lines
        return "\n".join(self._stderr_tail[-lines:])

    def _died(self, what: str):
        raise LoaderError("%s:\n%s" % (what, self._log_tail()))

    # -- the read paths' hook --------------------------------------------

    def _watch(self, waited: Optional[float]) -> None:
        """BatchReader's watch hook, which every read path of the Loader
        passes: LoaderGone when lcmon has exited; a warning with lcmon's
        state when a read has waited stall_warning seconds (again every as
        many). waited None: the writer left in the middle of a run, so
        lcmon is given a second to be seen gone."""
        if self.proc is None:
            return
        rc = self.proc.poll()
        if rc is None and waited is None:
            try:
                rc = self.proc.wait(1.0)
            except subprocess.TimeoutExpired:
                pass
        if rc is not None:
            raise self._gone(rc)
        if waited is None or not self.stall_warning:
            return
        if waited < self._stall_next - self.stall_warning:  # a new wait
            self._stall_next = self.stall_warning
        if waited >= self._stall_next:
            self._stall_next += self.stall_warning
            log.warning("no data on %s for %.0f s; lcmon (pid %d) runs: %s", self.pipe, waited,
                        self.proc.pid, self._state())

    def _gone(self, rc: int) -> LoaderGone:
        how = ("was killed by %s" % signal.Signals(-rc).name if rc < 0
               else "exited with status %d" % rc)
        tail = self._log_tail()
        e = LoaderGone("lcmon (pid %d, reading %s) %s; its last log lines:\n%s"
                       % (self.proc.pid, self.pipe, how, tail))
        e.returncode = rc
        e.log_tail = tail
        return e

    def _state(self) -> str:
        """lcmon's state and each stage's last second, from its socket (a
        connection of its own: the hook runs in the reader's thread)."""
        try:
            with Control(self.socket, timeout=2.0, reconnect=0) as c:
                snap = c.metrics()["last_second"]
                texts = {d.get("name", ""): [e.get("metric") for e in d.get("details", [])
                                             if e.get("as") == "TEXT"]
                         for d in c.hello.get("stages", [])}
        except Exception as e:  # a loader too stuck to answer says that much
            return "its socket does not answer (%s)" % e
        stages = "; ".join(_stage_line(st, texts) for st in snap.get("stage_metrics", []))
        return "%s; %s" % (snap.get("state", "?"), stages)

    # -- reading ---------------------------------------------------------

    def _output(self, output: Optional[str]) -> str:
        if output is None:
            if len(self.outputs) == 1:
                return self.outputs[0]
            if not self.outputs:
                raise LoaderError("the config has no fifo_writer stage: there is nothing to read")
            raise ValueError("this loader has %d outputs (%s): name the one to read, as in "
                             "loader.batches(%r)" % (len(self.outputs), ", ".join(self.outputs),
                                                     self.outputs[0]))
        if output not in self.pipes:
            raise ValueError("the loader has no output %r: its outputs (the fifo_writer stages) "
                             "are %s" % (output, ", ".join(self.outputs) or "none"))
        return output

    def reader(self, output: Optional[str] = None, **reader_kwargs) -> BatchReader:
        """The Loader's BatchReader of an output, made at its first use with
        reader_kwargs (expand=True, wait_for_pipe=60 unless given; see
        BatchReader); get(), maybe_next() and batches() read through it.
        Later calls return it as it is (other reader_kwargs: ValueError)."""
        name = self._output(output)
        r = self._readers.get(name)
        if r is None:
            kwargs = dict(expand=True, wait_for_pipe=60.0, wait_for_writer=False,
                          watch=self._watch)
            kwargs.update(reader_kwargs)
            r = self._readers[name] = BatchReader(self.pipes[name], **kwargs)
            self._reader_kwargs[name] = dict(reader_kwargs)
        elif reader_kwargs and reader_kwargs != self._reader_kwargs[name]:
            raise ValueError(
                "the reader of output %r is open with %s: its settings are given at its first "
                "use (get, maybe_next, batches or reader)"
                % (name, self._reader_kwargs[name] or "the defaults"))
        return r

    def get(self, output: Optional[str] = None, block: bool = True,
            timeout: Optional[float] = None, copy: Optional[bool] = None):
        """The next batch of an output: a dict of numpy arrays, expanded
        (upstream's DataLoader.get_next()). block=False: None at once when
        none is ready; timeout: None when none came in that time. The arrays
        are views the next batch overwrites; copy=True gives arrays of the
        caller's own. See BatchReader.get."""
        return self.reader(output).get(block, timeout, copy)

    def maybe_next(self, output: Optional[str] = None, copy: Optional[bool] = None):
        """The next batch of an output if one is ready, else None at once
        (upstream's DataLoader.maybe_get_next()); never closes the reader."""
        return self.reader(output).get(False, None, copy)

    def batches(self, output: Optional[str] = None, **reader_kwargs):
        """The batches of an output, as dicts of numpy arrays (restarts of
        the loader are waited for): packed ones expanded (expand=False: as
        they travel), views valid until the next batch (copy=True: arrays
        of their own, asked for here or when the reader was made). Other
        keyword arguments go to the output's BatchReader when this is its
        first use (see reader())."""
        copy = reader_kwargs.pop("copy", None)
        reader = self.reader(output, **reader_kwargs)
        while True:
            tensors = reader.get(copy=copy)
            if tensors is None:
                return
            yield tensors

    def dataset(self, output: Optional[str] = None, **kwargs):
        """lcmon.torch.BatchDataset over an output's pipe (device=...,
        expand=..., ...). It reads the pipe itself: the Loader's own reader
        of that output, if one is open, is closed first (lcmon sends again
        what it had not read whole). LoaderGone when lcmon dies."""
        from .torch import BatchDataset

        name = self._output(output)
        r = self._readers.pop(name, None)
        if r is not None:
            r.close()
            self._reader_kwargs.pop(name, None)
        kwargs.setdefault("wait_for_pipe", 60.0)
        kwargs.setdefault("watch", self._watch)
        return BatchDataset(self.pipes[name], **kwargs)

    # -- stopping --------------------------------------------------------

    def close(self, timeout: float = 30.0) -> Optional[int]:
        """Stop lcmon (SIGINT, then SIGKILL after timeout seconds) and
        remove the private directory; lcmon's exit status (0 after a clean
        stop or the end of a finite run). In a process forked from the one
        that made the Loader: nothing (None)."""
        if os.getpid() != self._owner:
            return None
        for r in self._readers.values():
            r.close()
        self._readers.clear()
        if self.control is not None:
            self.control.close()
            self.control = None
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None and finalizer.detach() is None:
            return self.proc.returncode if self.proc else None  # closed already
        self._closing = True  # its SIGINT is close()'s, not a user's
        rc = _stop(self._owner, self.proc, self.dir, self._lock_fd, timeout)
        self._lock_fd = -1
        if self._log_thread is not None:
            self._log_thread.join(5)
        if self.proc is not None and self.proc.stderr is not None:
            self.proc.stderr.close()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        _loaders.discard(self)
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None
