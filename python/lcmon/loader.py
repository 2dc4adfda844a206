"""Loader: start lcmon from Python, read its batches, steer it, stop it.

    import lcmon

    with lcmon.Loader("my-run.yaml") as loader:          # a path, YAML text or a dict
        loader.control.wait_for_new_chunks(5000)
        for batch in loader.batches():                   # dicts of numpy arrays
            ...
        # or: for batch in loader.dataset(device="cuda"): ...   (torch)

The loader runs `lcmon --no-ui` (in this process's working directory, so
that a config's relative paths mean what they say) with a private named
pipe and monitoring socket, and is stopped when the `with` block ends,
or when the Python process dies (even by SIGKILL: the kernel sends lcmon
SIGTERM then, PR_SET_PDEATHSIG). lcmon's log goes where `log` says: a file
path, or (the default) Python's logging module, logger "lcmon.loader".

The pipe: a config given as a dict gets the private pipe as its
fifo_writer's path; YAML text and files get it as ${LCMON_PIPE} (as the
default pipeline and the shipped configs use it). A config whose writer
names another path must say so: Loader(config, pipe=THAT_PATH).

A config lcmon refuses raises LoaderError with lcmon's own text (every
error, with its line and column).
"""

import ctypes
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from typing import Any, Dict, Optional, Union

from .control import Control
from .stream import BatchReader

__all__ = ["Loader", "LoaderError", "find_lcmon"]

log = logging.getLogger("lcmon.loader")
_LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} (error|warn|info|debug) +(.*)$")

_PR_SET_PDEATHSIG = 1


class LoaderError(RuntimeError):
    """lcmon did not start (its own words follow), or it died."""


def find_lcmon() -> str:
    """The lcmon executable: $LCMON, else `lcmon` on PATH, else the build
    of the source tree this package sits in."""
    exe = os.environ.get("LCMON")
    if exe:
        return exe
    found = shutil.which("lcmon")
    if found:
        return found
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.join(here, "..", "..", "build", "lcmon")
    if os.access(built, os.X_OK):
        return os.path.normpath(built)
    raise LoaderError("cannot find lcmon: set LCMON to the executable, or put it on PATH")


def _die_with_parent():  # runs in the child, between fork and exec
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except OSError:
        pass


def _with_pipe(config: Dict[str, Any], pipe: str) -> Dict[str, Any]:
    """A copy of a config dict whose fifo_writer writes to pipe."""
    config = json.loads(json.dumps(config))
    writers = [s["fifo_writer"] for s in config.get("stages", [])
               if isinstance(s, dict) and isinstance(s.get("fifo_writer"), dict)]
    if len(writers) == 1:
        writers[0]["path"] = pipe
    return config


class Loader:
    """A headless lcmon run by this process.

    config: a path to a YAML file, YAML text, or a dict (as the YAML would
        read).
    pipe: the named pipe to read (default: a private one, see above).
    log: a file path for lcmon's log, or None for Python's logging.
    lcmon: the executable (default: find_lcmon()).
    args: more command-line arguments for lcmon (["--log-level", "debug"]).
    env: more environment variables for lcmon (LCMON_DATA, RANK, ...).
    start_timeout: seconds to wait for lcmon to come up.
    anchor: the key a checkpoint saved (lcmon --anchor KEY): the pool's
        initial load counts the games after it, as upstream's daemon sets
        its anchor before the start; a resume waits for exactly the games
        that came since.
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
    ):
        self.dir = tempfile.mkdtemp(prefix="lcmon-loader-")
        self.socket = os.path.join(self.dir, "lcmon.sock")
        self.pipe = pipe or os.path.join(self.dir, "lcmon.pipe")
        self.proc: Optional[subprocess.Popen] = None
        self.control: Optional[Control] = None
        self._log_thread = None
        self._log_file = None
        self._stderr_tail = []
        self._closing = False
        try:
            cfg_path = self._write_config(config)
            cmd = [lcmon or find_lcmon(), "--no-ui", "--status-interval", "0",
                   "--config", cfg_path, "--socket", self.socket, *args]
            if anchor:
                cmd += ["--anchor", anchor]
            child_env = dict(os.environ)
            child_env["LCMON_PIPE"] = self.pipe
            child_env.update(env or {})
            if log is not None:
                self._log_file = open(log, "a")
                stderr = self._log_file
            else:
                stderr = subprocess.PIPE
            self.proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                env=child_env, preexec_fn=_die_with_parent, text=True,
            )
            if log is None:
                self._log_thread = threading.Thread(target=self._forward_log, daemon=True,
                                                    name="lcmon-log")
                self._log_thread.start()
            self._wait_up(start_timeout)
        except BaseException:
            self.close()
            raise

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
        while not (os.path.exists(self.socket) and os.path.exists(self.pipe)):
            if self.proc.poll() is not None:
                self._died("lcmon exited with status %d before it was up" % self.proc.returncode)
            if time.monotonic() > deadline:
                raise LoaderError("lcmon was not up after %.0f s (socket %s, pipe %s)" %
                                  (timeout, self.socket, self.pipe))
            time.sleep(0.02)
        self.control = Control(self.socket, timeout=max(1.0, deadline - time.monotonic()))

    def _died(self, what: str):
        if self._log_thread is not None:
            self._log_thread.join(5)
        tail = "\n".join(self._stderr_tail[-40:])
        if self._log_file is not None:
            tail = "(its log is in %s)" % self._log_file.name
        raise LoaderError("%s:\n%s" % (what, tail))

    # -- reading ---------------------------------------------------------

    def batches(self, **reader_kwargs):
        """The batches, as BatchReader.batches() gives them (restarts of the
        loader are waited for). Keyword arguments go to BatchReader."""
        reader_kwargs.setdefault("wait_for_pipe", 60.0)
        with BatchReader(self.pipe, **reader_kwargs) as reader:
            for b in reader.batches():
                yield b.tensors

    def dataset(self, **kwargs):
        """lcmon.torch.BatchDataset over the loader's pipe (device=...,
        expand=..., ...)."""
        from .torch import BatchDataset

        kwargs.setdefault("wait_for_pipe", 60.0)
        return BatchDataset(self.pipe, **kwargs)

    # -- stopping --------------------------------------------------------

    def close(self, timeout: float = 30.0) -> Optional[int]:
        """Stop lcmon (SIGINT, then SIGKILL after timeout seconds) and
        remove the private directory; lcmon's exit status."""
        if self.control is not None:
            self.control.close()
            self.control = None
        rc = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self._closing = True
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            rc = self.proc.returncode
            if self._log_thread is not None:
                self._log_thread.join(5)
            if self.proc.stderr is not None:
                self.proc.stderr.close()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

