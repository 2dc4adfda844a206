"""lcmon's Python side: read the batch stream of lcmon's fifo_writer.

    import lcmon
    with lcmon.BatchReader("/tmp/lcmon.pipe") as reader:
        for tensors in reader:          # dict: name -> numpy array
            ...

lcmon.Loader starts lcmon from Python (a config path, YAML text or a
dict) and stops it with the block; lcmon.Control talks to a headless
loader's monitoring socket (metrics, anchors, pause and resume, stop and
start, waiting for new games);
lcmon.expand turns a packed batch into the trainer's tensors (numpy);
lcmon.torch.BatchDataset wraps the reader as a torch IterableDataset and
expands packed batches on the trainer's device; lcmon.lczero gives the
tuples lczero-training's trainers take. Every error the package defines is
an lcmon.Error (lcmon.errors has the tree).

The modules: control (the socket's client) and wire (its framing and
protobuf codec); stream (BatchReader), stream_format (the stream's header
and records) and pipe (the named pipe's lock); loader; expand; torch;
lczero; errors.
"""

import os as _os

from .control import Control
from .errors import (
    ControlError,
    Error,
    LoaderError,
    LoaderGone,
    NotAStream,
    PipeBusy,
    ProtocolError,
    StreamError,
    StreamTruncated,
    StreamVersionError,
    WriterTimeout,
)
from .expand import Expander, expand
from .expand import kernel as expand_kernel
from .loader import Loader
from .stream import BatchReader
from .stream_format import (
    FLAG_LAST,
    MAGIC,
    VERSION,
    Batch,
    Freshness,
    Header,
    Progress,
    TensorSpec,
    describe,
    parse_header,
)

# The one version of lcmon, its man page and this package.
with open(_os.path.join(_os.path.dirname(__file__), "VERSION")) as _f:
    __version__ = _f.read().strip()
del _f

__all__ = [
    "Error",
    "Control",
    "ControlError",
    "LoaderGone",
    "ProtocolError",
    "expand",
    "expand_kernel",
    "Loader",
    "LoaderError",
    "Expander",
    "Batch",
    "BatchReader",
    "Freshness",
    "Header",
    "NotAStream",
    "PipeBusy",
    "Progress",
    "StreamError",
    "StreamTruncated",
    "StreamVersionError",
    "TensorSpec",
    "WriterTimeout",
    "describe",
    "parse_header",
    "FLAG_LAST",
    "MAGIC",
    "VERSION",
]
