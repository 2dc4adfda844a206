"""Command line: look at a batch stream and measure its rate.

    python3 -m lcmon PIPE --batches N [--expand | --torch DEVICE]

prints each tensor's name, dtype and shape once, then the rate (batches/s,
rows/s, MB/s) at the end, timed from the first batch's arrival (or from the
batch after --skip) and counting the batches after it; --batches 0 reads
until the end of the stream. Ctrl-C or SIGTERM ends it with the same
one-line summary (exit status 130 or 143): a script that runs it in the
background, where SIGINT is ignored, ends it with SIGTERM.
--expand expands packed batches with numpy, --torch DEVICE reads through
lcmon.torch.BatchDataset onto DEVICE ("cpu", "cuda"): the rate a trainer's
loop would see. MB/s counts the bytes that crossed the pipe.
"""

import argparse
import logging
import signal
import sys
import time

from .stream import BatchReader, StreamError, describe


class _Terminated(KeyboardInterrupt):
    """SIGTERM: the reader ends as on Ctrl-C."""


def _on_sigterm(signum, frame):
    # A second SIGTERM (while the summary is printed) ends the process at once.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise _Terminated()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python3 -m lcmon",
        description="Read an lcmon batch stream (a named pipe or a file) and report its rate.",
    )
    ap.add_argument("path", help="the named pipe (or a file holding a stream)")
    ap.add_argument(
        "--batches", type=int, default=0, help="batches to read (0: until the end of the stream)"
    )
    ap.add_argument(
        "--skip",
        type=int,
        default=0,
        help="batches read before the timing starts (a loader's warm-up, such as the chunk "
        "pool's first pass); --batches counts them too",
    )
    ap.add_argument("--copy", action="store_true", help="copy each batch's arrays")
    ap.add_argument(
        "--expand",
        action="store_true",
        help="expand packed batches into the trainer's tensors (numpy), as a trainer would",
    )
    ap.add_argument(
        "--torch",
        metavar="DEVICE",
        default=None,
        help="read through lcmon.torch.BatchDataset onto DEVICE (cpu, cuda, ...)",
    )
    ap.add_argument(
        "--restarts",
        choices=("wait", "end"),
        default="end",
        help="when the loader's run stops: wait for its next run, or end here (default)",
    )
    ap.add_argument(
        "--tolerate-truncation",
        action="store_true",
        help="treat a run ending without DONE as a normal end",
    )
    ap.add_argument(
        "--timeout", type=float, default=None, help="seconds to wait for data before giving up"
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    n = rows = nbytes = 0
    t0 = None
    began = None  # Unix time of t0, for timing against other processes
    timed = timed_rows = timed_bytes = 0
    status = 0
    ended = "stopped after %d batches"
    reader = None
    try:
        old_sigterm = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # main() called from a thread other than the main one
        old_sigterm = None
    try:
        kwargs = dict(
            copy=args.copy,
            tolerate_truncation=args.tolerate_truncation,
            timeout=args.timeout,
            restarts=args.restarts,
        )
        if args.torch is not None:
            holder = _TorchReader(args.path, args.torch, kwargs)
            reader = holder
        else:
            reader = BatchReader(args.path, expand=args.expand, **kwargs)
        shown = None
        # The rate is timed from the arrival of the first batch after the
        # skipped ones and counts the batches after it, so that the loader's
        # warm-up does not count against it.
        while args.batches <= 0 or n < args.batches:
            if reader.header is not None and reader.header != shown:
                shown = reader.header
                print(describe(shown), flush=True)
            b = reader.read_batch()
            if b is None:
                break
            n += 1
            rows += b.rows
            nbytes += reader.header.payload_bytes
            if t0 is None:
                if n > args.skip:
                    t0 = time.perf_counter()
                    began = time.time()
            else:
                timed += 1
                timed_rows += b.rows
                timed_bytes += reader.header.payload_bytes
    except KeyboardInterrupt as e:
        if isinstance(e, _Terminated):
            ended, status = "terminated after %d batches", 128 + signal.SIGTERM
        else:
            ended, status = "interrupted after %d batches", 130
    except (StreamError, OSError) as e:  # TimeoutError is an OSError
        print("lcmon: %s" % e, file=sys.stderr)
        status = 1
    finally:
        if reader is not None:
            reader.close()
    if status == 1 and n == 0:  # nothing was read: the error alone says it
        if old_sigterm is not None:
            signal.signal(signal.SIGTERM, old_sigterm)
        return status
    if reader is not None and reader.done:
        ended = "end of stream (DONE)"
    elif reader is not None and reader.stopped:
        ended = "the run was stopped"
    elif reader is not None and reader.truncated:
        ended = "truncated stream"
    else:
        ended = ended % n
    dt = max(time.perf_counter() - t0, 1e-9) if t0 is not None else 1e-9
    after = "the first batch" if args.skip <= 0 else "batch %d" % (args.skip + 1)
    skipped = ""
    if args.skip > 0 and began is not None:
        skipped = "; timing began at %.3f (Unix time)" % began
    progress = getattr(reader, "progress", None)
    if progress is not None and progress != type(progress)():
        ended += "; %s" % (progress,)  # a tuple: formatted whole, not spread
    print(
        "%d batches, %d rows, %.1f MB; after %s: %.3f s, "
        "%.1f batches/s, %.0f rows/s, %.1f MB/s; %s%s"
        % (n, rows, nbytes / 1e6, after, dt, timed / dt, timed_rows / dt, timed_bytes / 1e6 / dt,
           ended, skipped),
        flush=True,
    )
    if old_sigterm is not None:
        signal.signal(signal.SIGTERM, old_sigterm)
    return status


class _TorchReader:
    """BatchDataset behind the few members main() uses of a BatchReader."""

    def __init__(self, path, device, kwargs):
        from .torch import BatchDataset

        kwargs = dict(kwargs)
        tolerate = kwargs.pop("tolerate_truncation")
        self.ds = BatchDataset(path, device=device, tolerate_truncation=tolerate, **kwargs)
        self.it = iter(self.ds)
        self.first = next(self.it, None)  # opens the reader: the header is known

    def __getattr__(self, name):  # header, done, stopped, truncated
        return getattr(self.ds.reader, name)

    def read_batch(self):
        item, self.first = (self.first, None) if self.first is not None else (next(self.it, None),
                                                                              None)
        if item is None:
            return None
        rows = next(iter(item.values())).shape[0]
        return _Rows(rows)

    def close(self):
        if self.ds.reader is not None:
            self.ds.reader.close()


class _Rows:
    def __init__(self, rows):
        self.rows = rows


if __name__ == "__main__":
    sys.exit(main())
