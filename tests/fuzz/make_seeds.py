#!/usr/bin/python3
"""Write the committed seed corpora of tests/fuzz/corpus/ from the test data.

Run from anywhere: /usr/bin/python3 tests/fuzz/make_seeds.py
Deterministic: the same repository gives the same files. Each target's
README in docs/fuzzing.md says what its first bytes mean; the seeds follow.
"""
import glob
import gzip
import io
import os
import struct
import tarfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
DATA = os.path.join(ROOT, "tests", "data")
RECORD_SIZE = {3: 8276, 4: 8292, 5: 8308, 6: 8356, 7: 8396}


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def smallest_games():
    out = []
    for d in sorted(glob.glob(os.path.join(DATA, "lc0-*"))):
        games = sorted(glob.glob(os.path.join(d, "*.gz")), key=os.path.getsize)
        out.append((os.path.basename(d), games[0]))
    return out


def gz(payload, mtime=0, name=None):
    buf = io.BytesIO()
    with gzip.GzipFile(filename=name or "", mode="wb", fileobj=buf, mtime=mtime) as f:
        f.write(payload)
    return buf.getvalue()


def raw_deflate(payload):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(payload) + c.flush()


def chunk_seeds(games):
    for folder, path in games:
        data = open(path, "rb").read()
        put("chunk", folder + ".zlib", b"\x00" + data)
        put("chunk", folder + ".libdeflate", b"\x02" + data)
    # Inflated payloads (mode 1): two records, as each version lays them out.
    first = gzip.decompress(open(games[0][1], "rb").read())
    two = first[:2 * RECORD_SIZE[6]]
    put("chunk", "raw-v6-two-records", b"\x01" + two)
    for v in (3, 4, 5, 7):
        size = RECORD_SIZE[v]
        recs = b""
        for r in range(2):
            rec = bytearray(two[r * RECORD_SIZE[6]:(r + 1) * RECORD_SIZE[6]])
            rec[0:4] = struct.pack("<I", v)
            rec = bytes(rec[:size]).ljust(size, b"\0")
            recs += rec
        put("chunk", "raw-v%d-two-records" % v, b"\x01" + recs)
    put("chunk", "raw-short", b"\x01" + struct.pack("<I", 6) + b"\0" * 10)
    put("chunk", "raw-unknown-version", b"\x01" + struct.pack("<I", 9) + b"\0" * 100)


def inflate_seeds(games):
    data = open(games[0][1], "rb").read()
    put("inflate", "game.gz", data)
    payload = gzip.decompress(data)[:3000]
    put("inflate", "two-members.gz", gz(payload[:1000]) + gz(payload[1000:]))
    put("inflate", "named.gz", gz(payload, name="game_000001"))
    put("inflate", "trailing-zeros.gz", gz(payload) + b"\0" * 8)
    put("inflate", "empty-member.gz", gz(b""))
    body = raw_deflate(payload) + struct.pack("<II", zlib.crc32(payload), len(payload))
    # The header-building mode: flags, twist, then body and trailer.
    for flags, twist in ((0, 0), (2, 0), (2, 1), (4 | 8 | 16, 0), (2 | 4 | 8 | 16, 0x81)):
        extra = b"\x03abc" if flags & 4 else b""
        put("inflate", "header-%02x-%02x" % (flags, twist), bytes([flags, twist]) + extra + body)


def tar_seeds(games):
    def archive(members, fmt=tarfile.GNU_FORMAT):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
            for name, kind, data in members:
                info = tarfile.TarInfo(name)
                info.mtime = 1700000000
                info.type = kind
                if kind == tarfile.SYMTYPE:
                    info.linkname = "elsewhere.gz"
                if data is not None:
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
                else:
                    t.addfile(info)
        return buf.getvalue()

    small = [gz(gzip.decompress(open(p, "rb").read())[:RECORD_SIZE[6]]) for _, p in games[:2]]
    put("tar", "two-chunks.tar",
        archive([("training.1.gz", tarfile.REGTYPE, small[0]),
                 ("training.2.gz", tarfile.REGTYPE, small[1])]))
    put("tar", "kinds.tar",
        archive([("run", tarfile.DIRTYPE, None),
                 ("run/" + "long-name-" * 12 + ".gz", tarfile.REGTYPE, small[0]),
                 ("run/link.gz", tarfile.SYMTYPE, None),
                 ("run/notes.txt", tarfile.REGTYPE, b"not a chunk\n")]))
    put("tar", "pax.tar",
        archive([("pax/" + "p" * 120 + ".gz", tarfile.REGTYPE, small[1])], tarfile.PAX_FORMAT))
    put("tar", "ustar-prefix.tar",
        archive([("d" * 90 + "/" + "f" * 60 + ".gz", tarfile.REGTYPE, small[0])],
                tarfile.USTAR_FORMAT))
    # Raw records beside a gzip member (upstream reads such members as
    # records): one whole V6 record, and one a byte short (skipped).
    raw = gzip.decompress(open(games[0][1], "rb").read())[:RECORD_SIZE[6]]
    put("tar", "raw-members.tar",
        archive([("training.1.gz", tarfile.REGTYPE, small[0]),
                 ("training.2.raw", tarfile.REGTYPE, raw),
                 ("training.3.raw", tarfile.REGTYPE, raw[:-1])]))
    whole = archive([("training.1.gz", tarfile.REGTYPE, small[0])])
    put("tar", "truncated.tar", whole[:700])
    put("tar", "empty.tar", b"\0" * 1024)


def parquet_seeds():
    # The fixtures (tests/parquet/fixtures and its bad/) are the real seeds;
    # the replay test reads them in place. These are the degenerate shapes.
    put("parquet", "magic-only", b"PAR1")
    put("parquet", "two-magics", b"PAR1PAR1")
    put("parquet", "footer-past-start", b"PAR1" + struct.pack("<I", 1000) + b"PAR1")
    put("parquet", "empty-metadata", b"PAR1\x00" + struct.pack("<I", 1) + b"PAR1")


def parquet_decoder_seeds():
    # 0: Thrift: the FileMetaData of a real file.
    f = open(os.path.join(ROOT, "tests", "parquet", "fixtures", "arrow_lz4_raw.parquet"), "rb").read()
    n = struct.unpack("<I", f[-8:-4])[0]
    put("parquet_decoders", "thrift-file-metadata", b"\x00" + f[-8 - n:-8])
    put("parquet_decoders", "thrift-nested", b"\x00" + b"\x1c\x1c\x1c\x15\x02\x00\x00\x00\x00")
    # 1: Snappy: literals, then a copy.
    text = b"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
    lit = bytes([len(text)]) + bytes([(len(text) - 1) << 2]) + text
    put("parquet_decoders", "snappy-literal", b"\x01" + lit)
    # 4 literal bytes "abcd", then a 1-byte-offset copy of 8 bytes from offset 4.
    put("parquet_decoders", "snappy-copy", b"\x01" + bytes([12, 3 << 2]) + b"abcd" +
        bytes([((8 - 4) << 2) | 1, 4]))
    # 2: hybrid: bw 3, 16 values; a repeated run of 8 (value 5), a packed group.
    put("parquet_decoders", "hybrid-runs",
        b"\x02\x03" + struct.pack("<I", 16) + b"\x08" + bytes([8 << 1, 5, (1 << 1) | 1]) +
        bytes([0b10001000, 0b11000110, 0b11111010]))
    # 3: bit-packed MSB first.
    put("parquet_decoders", "bit-packed", b"\x03\x02\x00" + struct.pack("<I", 8) + b"\x1b\xe4")
    # 4: delta binary packed: block 128, 4 miniblocks, 5 values, first 7,
    # then min delta 1, widths 0.
    put("parquet_decoders", "delta",
        b"\x04\x00" + struct.pack("<I", 64) + bytes([0x80, 0x01, 4, 5, 14, 2, 0, 0, 0, 0]))
    put("parquet_decoders", "delta32", b"\x04\x01" + struct.pack("<I", 64) +
        bytes([0x80, 0x01, 4, 3, 0xfe, 0xff, 0xff, 0xff, 0x0f, 2, 1, 1, 1, 1, 0xff]))
    # 5: varints.
    put("parquet_decoders", "varints", b"\x05\x00\x7f\x80\x01\xff\xff\xff\xff\x0f")
    # 6, 7, 8: LZ4_RAW, LZ4 and BROTLI pages after the page size (u32).
    # A bare LZ4 block: literals "abcdefgh", a copy of 16 bytes from 8 back,
    # the last literals "12345" (29 bytes).
    block = bytes([0x8C]) + b"abcdefgh" + bytes([8, 0, 0x50]) + b"12345"
    size = struct.pack("<I", 29)
    put("parquet_decoders", "lz4-raw-block", b"\x06" + size + block)
    put("parquet_decoders", "lz4-hadoop", b"\x07" + size + struct.pack(">II", 29, len(block)) + block)
    put("parquet_decoders", "lz4-frame", b"\x07" + size + lz4_frame(block))
    put("parquet_decoders", "lz4-bare-block", b"\x07" + size + block)
    put("parquet_decoders", "brotli-empty", b"\x08" + struct.pack("<I", 0) + b"\x06")
    text = b"rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"
    put("parquet_decoders", "brotli-stored",
        b"\x08" + struct.pack("<I", len(text)) + brotli_stored(text))


def xxh32(data, seed=0):
    """XXH32 (the LZ4 frame format's checksum), from its specification."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & m

    n, i = len(data), 0
    if n >= 16:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed & m, (seed - p1) & m]
        while i + 16 <= n:
            for k in range(4):
                v[k] = (rotl((v[k] + struct.unpack_from("<I", data, i)[0] * p2) & m, 13) * p1) & m
                i += 4
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while i + 4 <= n:
        h = (rotl((h + struct.unpack_from("<I", data, i)[0] * p3) & m, 17) * p4) & m
        i += 4
    while i < n:
        h = (rotl((h + data[i] * p5) & m, 11) * p1) & m
        i += 1
    h ^= h >> 15
    h = (h * p2) & m
    h ^= h >> 13
    h = (h * p3) & m
    h ^= h >> 16
    return h


def lz4_frame(block):
    """One LZ4 frame holding one compressed block: the magic, the frame
    descriptor (version 1, independent blocks; 64 KB blocks) and its
    checksum byte, the block's size and bytes, the end mark."""
    desc = bytes([0x60, 0x40])
    return (struct.pack("<I", 0x184D2204) + desc + bytes([(xxh32(desc) >> 8) & 0xFF]) +
            struct.pack("<I", len(block)) + block + struct.pack("<I", 0))


def brotli_stored(data):
    """A Brotli stream (RFC 7932) of one stored (uncompressed) meta-block and
    the last, empty one. Bits go least significant first: WBITS 16 (0),
    ISLAST 0, MNIBBLES 4 (00), MLEN - 1 in 16 bits, ISUNCOMPRESSED 1, padding
    to the byte, the data; then ISLAST 1, ISLASTEMPTY 1."""
    assert 0 < len(data) <= 1 << 16
    bits = [0, 0, 0, 0] + [((len(data) - 1) >> k) & 1 for k in range(16)] + [1]
    bits += [0] * (-len(bits) % 8)
    head = bytes(sum(b << k for k, b in enumerate(bits[i:i + 8])) for i in range(0, len(bits), 8))
    return head + data + bytes([0x03])


def chess_seeds():
    rows = []
    for line in gzip.open(os.path.join(ROOT, "tests", "parquet", "fixtures",
                                       "own_dictionary_offsets.tsv.gz"), "rt"):
        cols = line.rstrip("\n").split("\t")
        if cols[0] == "game_id":
            continue
        rows.append(cols)
    games = {}
    for r in rows:
        games.setdefault(r[0], []).append(r)
    for i, gid in enumerate(sorted(games)[:3]):
        lines = ["%s|%s|%s" % (r[1], r[3], r[4]) for r in games[gid][:12]]
        put("chess", "game-%d" % i, bytes([0x13 + i * 0x20]) + "\n".join(lines).encode())
    put("chess", "promotions-and-castling", b"\x01" + b"\n".join([
        b"r3k2r/1P6/8/8/8/8/6p1/R3K2R w KQkq - 0 1|b7b8q|e1g1",
        b"r3k2r/1P6/8/8/8/8/6p1/R3K2R b KQkq - 0 1|g2g1n|e8c8",
        b"8/8/8/8/8/8/8/8 w - - 0 1|e1h1|e8a8"]))
    put("chess", "bad-fen", b"\x00rnbqkbnr/ppppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1|e2e4|e2e4")


def config_seeds():
    # The shipped configurations (config/) are read in place; these are the
    # mistakes people make.
    put("config", "typo.yaml", b"stages:\n  - name: files\n    file_path_provder: {directory: d}\n")
    put("config", "negative.yaml",
        b"stages:\n  - name: files\n    file_path_provider: {directory: d}\n"
        b"    output: {capacity: -3}\n")
    put("config", "missing-input.yaml",
        b"stages:\n  - name: sources\n    input: files\n    chunk_source_loader: {threads: 1}\n")
    put("config", "duplicate.yaml",
        b"stages:\n  - name: a\n    file_path_provider: {directory: d}\n"
        b"  - name: a\n    file_path_provider: {directory: e}\n")
    put("config", "anchors.yaml",
        b"x: &a {directory: d}\nstages:\n  - name: f\n    file_path_provider: *a\n")
    put("config", "not-a-mapping.yaml", b"- 1\n- 2\n")


def upstream_seeds():
    # The hand-written configs of tests/pipeline/upstream/ are read in place;
    # these are the text format's corners and the mistakes people make.
    put("upstream", "escapes.pbtxt",
        b'stage { name: "f\\x41\\101\\n" file_path_provider { directory: \'d\' "e" } }\n')
    put("upstream", "lists.pbtxt",
        b'stage: [{name: "f" file_path_provider < directory: "d" >}, '
        b'{name: "s" input: ["f"] chunk_source_splitter { output: [{name: "a"}, {name: "b"}] '
        b'weight: [0x3, 1] }}]\n')
    put("upstream", "cycle.pbtxt",
        b'stage { name: "a" input: "b" chunk_source_loader {} }\n'
        b'stage { name: "b" input: "a" chunk_source_loader {} }\n')
    put("upstream", "typo.pbtxt",
        b'data_loader { stage { name: "p" shuffling_chunk_pool { chunk_pool_sise: 3 } } }\n')
    put("upstream", "numbers.pbtxt",
        b'stage { name: "u" chunk_unpacker { position_sampling_rate: -inf '
        b'position_count: 18446744073709551615 } }\n'
        b'stage { name: "r" input: "u" chunk_rescorer { new_input_format: -1 dist_temp: 1e308 '
        b'st_q_theta: .5f } }\n')
    put("upstream", "unterminated.pbtxt", b'data_loader {\n  stage { name: "a\n')


def varint(n):
    out = b""
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def msg(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vint(num, v):
    return varint(num << 3) + varint(v)


def monitor_seeds():
    def frame(payload):
        return struct.pack("<I", len(payload)) + payload

    def control(req, rid):
        return frame(msg(2, req) + vint(3, rid))

    def command(name, rid, stage=None, *args):
        """ControlRequest{command: name, args, stage} (fields 4, 5, 6)."""
        req = msg(4, name) + b"".join(msg(5, a) for a in args)
        return control(req + (msg(6, stage) if stage else b""), rid)

    sub = frame(msg(1, vint(1, 50) + vint(3, 1)))
    pause = command(b"pause", 1, b"pool")
    resume = command(b"resume", 2, b"pool")
    anchor_q = command(b"anchor-get", 3)
    anchor_set = command(b"anchor-set", 4, None, b"training.123.gz")
    anchor_reset = command(b"anchor-reset", 5)
    stop = command(b"stop", 6)
    start = command(b"start", 7)
    unknown_stage = command(b"pause", 8, b"nope")
    reload = command(b"reload", 9)  # nothing to reload here; a hello to all
    # The request forms protocol 3 dropped (pipeline_command, stage_request,
    # reload_config: fields 1 to 3): refused as naming no command.
    older = control(vint(1, 1) + msg(2, msg(2, b"pool") + vint(3, 1)) + vint(3, 1), 10)
    # Mode 1: the bytes as they are.
    put("monitor", "subscribe", b"\x01" + sub)
    put("monitor", "controls", b"\x01" + sub + pause + resume + anchor_q + anchor_set +
        anchor_reset + unknown_stage)
    put("monitor", "stop-start", b"\x01" + stop + start)
    put("monitor", "reload", b"\x01" + sub + reload + anchor_q)
    put("monitor", "older-forms", b"\x01" + sub + older + anchor_q)
    put("monitor", "garbage", b"\x01" + struct.pack("<I", 8) + b"\xff" * 8)
    put("monitor", "oversize", b"\x01" + struct.pack("<I", 0xfffffff0) + b"\x0a")
    put("monitor", "truncated", b"\x01" + pause[:7])
    put("monitor", "after-garbage", b"\x01" + pause + frame(b"\xff\xff") + resume)
    # Mode 0: records of a 2-byte length and a payload, framed by the target.
    def rec(f):
        p = f[4:]
        return struct.pack("<H", len(p)) + p
    put("monitor", "records", b"\x00" + rec(sub) + rec(anchor_q) + rec(pause) + rec(resume))


def main():
    games = smallest_games()
    chunk_seeds(games)
    inflate_seeds(games)
    tar_seeds(games)
    parquet_seeds()
    parquet_decoder_seeds()
    chess_seeds()
    config_seeds()
    upstream_seeds()
    monitor_seeds()
    for t in sorted(os.listdir(CORPUS)):
        print("%-18s %3d seeds" % (t, len(os.listdir(os.path.join(CORPUS, t)))))


if __name__ == "__main__":
    main()
