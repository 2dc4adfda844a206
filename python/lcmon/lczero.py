"""lczero-training glue: lcmon's batches in the shapes its trainers take.

The legacy TensorFlow trainer (tf/train.py) reads ChunkParser.parse(): a
generator of 5-tuples of raw float32 bytes per batch, which it decodes with
tf.io.decode_raw. chunkparser_batches gives exactly those tuples from an
lcmon pipe in the legacy layout, so it can stand where parse() stood:

    from lcmon.lczero import chunkparser_batches
    gen = lambda: chunkparser_batches("/tmp/lcmon.pipe")
    ds = tf.data.Dataset.from_generator(gen, output_types=(tf.string,) * 5)
    ds = ds.map(ChunkParser.parse_function)      # the trainer's own decoder

The current trainer takes the tuple its C++ loader's DataLoader.get_next()
returns: (inputs, policy, values) numpy arrays, float32, shaped [B,112,8,8],
[B,1858] and [B,6,3]. loader_batches gives those from a pipe in the current
layout:

    from lcmon.lczero import loader_batches
    for inputs, policy, values in loader_batches("/tmp/lcmon.pipe"):
        ...

Both take packed streams too (`packed: true`): the batches are expanded
(lcmon.expand) into the same arrays.

rl_cycles runs the reinforcement-learning loop of upstream's daemon: wait
for N new games, move the anchor, train K steps, checkpoint with the anchor
(examples/rl_loop.py runs it end to end).

The tensors and what each value means: docs/lc0-training-data.md.
"""

import itertools
from typing import Any, Iterator, NamedTuple, Optional, Tuple, Union

import numpy as np

from .expand import Expander
from .stream import BatchReader

__all__ = ["chunkparser_batches", "loader_batches", "rl_cycles", "Cycle", "LEGACY", "CURRENT"]

# The tensors of each layout, in the order the trainers take them.
LEGACY = ("planes", "probs", "winner", "best_q", "plies_left")
CURRENT = ("inputs", "policy", "values")


def _batches(source, names, layout, reader_kwargs):
    reader = source if isinstance(source, BatchReader) else BatchReader(source, **reader_kwargs)
    expander = Expander()
    try:
        while True:
            b = reader.read_batch()
            if b is None:
                return
            if b.expand:
                b = b._replace(tensors=expander(b.tensors, b.expand), expand="")
            missing = [n for n in names if n not in b.tensors]
            if missing:
                raise ValueError(
                    "%s: the stream has tensors %s, not the %s layout's %s: set layout: %s on "
                    "lcmon's tensor_generator"
                    % (reader.path, sorted(b.tensors), layout, list(names), layout)
                )
            yield b
    finally:
        if reader is not source:
            reader.close()


def chunkparser_batches(
    source: Union[str, BatchReader], **reader_kwargs
) -> Iterator[Tuple[bytes, bytes, bytes, bytes, bytes]]:
    """Per batch, the legacy ChunkParser.parse() tuple (planes, probs,
    winner, best_q, plies_left) of raw little-endian float32 bytes:
    B*112*64, B*1858, B*3, B*3 and B floats. source: a pipe path or an open
    BatchReader (on the legacy layout)."""
    for b in _batches(source, LEGACY, "legacy", reader_kwargs):
        yield tuple(np.ascontiguousarray(b.tensors[n], dtype="<f4").tobytes() for n in LEGACY)


def loader_batches(
    source: Union[str, BatchReader], copy: bool = False, **reader_kwargs
) -> Iterator[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per batch, (inputs, policy, values) as the current loader's
    get_next() returns them. The arrays are views valid until the next
    batch unless copy=True. source: a pipe path or an open BatchReader (on
    the current layout)."""
    for b in _batches(source, CURRENT, "current", reader_kwargs):
        arrays = tuple(b.tensors[n] for n in CURRENT)
        yield tuple(a.copy() for a in arrays) if copy else arrays


class Cycle(NamedTuple):
    """One round of the reinforcement-learning loop: its number (from 0),
    the anchor it set (save it with the checkpoint made after it), the new
    games (those after the previous anchor up to this one, as the move of
    the anchor counted them: at least the `new_games` waited for), its
    batches (an iterator of `steps` batches), and what its fresh request did
    (lcmon.control.Fresh: the games' ingest sequence numbers; None with
    fresh=False)."""

    index: int
    anchor: str
    new_games: int
    batches: Iterator
    fresh: Optional[Any] = None


def rl_cycles(control, batches, new_games: int, steps: int, anchor: Optional[str] = None,
              cycles: Optional[int] = None, timeout: Optional[float] = None,
              fresh: bool = True):
    """The reinforcement-learning loop upstream's daemon runs, as cycles:
    wait until `new_games` games have arrived since the anchor, move the
    anchor to the newest game, train `steps` batches, save a checkpoint with
    the anchor; again.

        saved = load_checkpoint_anchor()              # None on the first run
        with lcmon.Loader("rl.yaml", anchor=saved) as loader:
            for cycle in rl_cycles(loader.control, loader.batches(), 10000, 1000,
                                   anchor=saved):
                for batch in cycle.batches:
                    train_step(batch)
                save_checkpoint(model, anchor=cycle.anchor)

    control: an lcmon.Control (Loader.control); batches: an iterator of
    batches (Loader.batches(), a BatchReader, a DataLoader...). anchor: the
    anchor saved with the checkpoint being resumed: the first wait is for
    the games after it. A loader started with it (Loader(config,
    anchor=saved), lcmon --anchor KEY) counted them at its start and is left
    as it is; otherwise the anchor is set and the count made again from the
    pool's window (anchor-recount: exact when the saved game is still in
    the window; refused with sharding, where each rank's loader must be
    started with the anchor). cycles: stop after that many (None: never).
    timeout: seconds one wait may take (TimeoutError). A cycle's batches
    must be taken (or the cycle abandoned) before the next one is asked for.

    fresh: after each wait, ask the loader for the games waited for at once
    (Control.fresh): the cycle's second batch, the first made after the
    wait, holds a position of each, where without it they would come
    tens of batches later, after what the queues and the shuffle reservoir
    hold (docs/performance.md, "Freshness"). False: upstream's order.
    """
    if anchor and control.anchor()[0] != anchor:
        control.set_anchor(anchor, recount=True)
    it = iter(batches)
    k = 0
    while cycles is None or k < cycles:
        control.wait_for_new_chunks(new_games, timeout=timeout)
        key, counted = control.reset_anchor()
        asked = control.fresh() if fresh else None
        yield Cycle(k, key, counted, itertools.islice(it, steps), asked)
        k += 1
