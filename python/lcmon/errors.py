"""The package's errors: every one is an lcmon.Error.

    try:
        ...
    except lcmon.Error as e:      # any error of lcmon's own
        ...

Each also keeps the base it had before lcmon.Error existed, so that an
`except` clause written for that base still catches it: LoaderGone is a
ConnectionError (an OSError), WriterTimeout a TimeoutError (an OSError),
LoaderError a RuntimeError.

    Error
    |-- ControlError         the loader refused a request (its words)
    |-- ProtocolError        the socket is not lcmon's, or another version
    |-- LoaderGone           also ConnectionError: no loader, or it died
    |-- LoaderError          also RuntimeError: lcmon did not start
    |-- WriterTimeout        also TimeoutError: no next run in time
    `-- StreamError          the bytes are not a valid batch stream
        |-- StreamTruncated
        |-- StreamVersionError
        |-- NotAStream
        `-- PipeBusy

Errors of the caller's arguments stay Python's own (ValueError, KeyError,
IndexError), as do TimeoutError for a wait the caller bounded and the
errors of the operating system (a path that cannot be opened).
"""

__all__ = [
    "Error",
    "ControlError",
    "ProtocolError",
    "LoaderGone",
    "LoaderError",
    "StreamError",
    "StreamTruncated",
    "StreamVersionError",
    "NotAStream",
    "PipeBusy",
    "WriterTimeout",
]


class Error(Exception):
    """The base of every error the lcmon package defines."""


# ---- the monitoring socket (lcmon.Control) ----------------------------------


class ControlError(Error):
    """The loader answered a request with an error (its words)."""


class ProtocolError(Error):
    """The socket does not speak lcmon's monitoring protocol (or another
    version of it)."""


class LoaderGone(Error, ConnectionError):
    """No loader on the socket, or it went away and did not come back.
    lcmon.Loader's reads raise it too when its lcmon dies, with the
    attributes returncode (Popen's: negative for a signal) and log_tail
    (lcmon's last log lines, also in the message)."""


# ---- lcmon run from Python (lcmon.Loader) -----------------------------------


class LoaderError(Error, RuntimeError):
    """lcmon did not start (its own words follow), or it died."""


# ---- the batch stream (lcmon.BatchReader) -----------------------------------


class StreamError(Error):
    """The bytes are not a valid lcmon batch stream."""


class StreamTruncated(StreamError):
    """The stream ended without its DONE marker: the writer stopped or died
    (raised only with restarts="end" and without tolerate_truncation)."""


class StreamVersionError(StreamError):
    """The stream is of a version this reader does not know (a newer lcmon:
    install the Python package of the lcmon that writes it)."""


class NotAStream(StreamError):
    """The path is not a named pipe or a file holding an lcmon batch stream."""


class PipeBusy(StreamError):
    """Another reader holds the pipe: a pipe has one reader."""


class WriterTimeout(Error, TimeoutError):
    """No writer (no next run) came within the timeout."""
