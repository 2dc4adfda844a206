// A tiny byte-level Parquet writer, ours, for what no writer from the
// registry produces and for malformed files with a known defect in a known
// place. It is deliberately simple and explicit: uncompressed, GZIP, BROTLI
// (node's zlib) or LZ4_RAW (lz4js's block compressor) pages,
// PLAIN or dictionary values, RLE/bit-packed or the deprecated BIT_PACKED
// definition levels, data pages v1 or v2, and knobs that break one thing at a
// time (see `faults` below). Independent of the C reader: written from the
// Parquet format description (parquet.thrift and Encodings.md).

import zlib from 'node:zlib';
import lz4js from 'lz4js';

// ---- Thrift compact protocol ------------------------------------------------

const CT = { TRUE: 1, FALSE: 2, BYTE: 3, I16: 4, I32: 5, I64: 6, DOUBLE: 7, BINARY: 8, LIST: 9, STRUCT: 12 };

function varint(out, v) {
  let n = BigInt(v);
  if (n < 0n) throw new Error('varint of a negative number');
  do {
    let b = Number(n & 0x7fn);
    n >>= 7n;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
}

const zigzag = (v) => { const n = BigInt(v); return n >= 0n ? n << 1n : ((-n) << 1n) - 1n; };

const wireType = (kind) => (Array.isArray(kind) ? CT.LIST : {
  i32: CT.I32, i64: CT.I64, bin: CT.BINARY, struct: CT.STRUCT, bool: CT.TRUE,
}[kind]);

function value(out, kind, v) {
  if (Array.isArray(kind)) { // ['list', elemKind]
    const et = wireType(kind[1]);
    if (v.length < 15) out.push((v.length << 4) | et);
    else { out.push(0xf0 | et); varint(out, v.length); }
    for (const e of v) value(out, kind[1], e);
  } else if (kind === 'i32' || kind === 'i64') {
    varint(out, zigzag(v));
  } else if (kind === 'bin') {
    const b = typeof v === 'string' ? Buffer.from(v, 'utf8') : Buffer.from(v);
    varint(out, b.length);
    out.push(...b);
  } else if (kind === 'struct') {
    struct(out, v);
  } else {
    throw new Error(`kind ${kind}`);
  }
}

// fields: [[id, kind, value], ...]; undefined values are left out.
function struct(out, fields) {
  let last = 0;
  for (const [id, kind, v] of fields) {
    if (v === undefined) continue;
    const t = kind === 'bool' ? (v ? CT.TRUE : CT.FALSE) : wireType(kind);
    const delta = id - last;
    if (delta > 0 && delta <= 15) out.push((delta << 4) | t);
    else { out.push(t); varint(out, zigzag(id)); }
    last = id;
    if (kind !== 'bool') value(out, kind, v);
  }
  out.push(0);
}

export function thrift(fields) {
  const out = [];
  struct(out, fields);
  return Buffer.from(out);
}

// ---- encodings ----------------------------------------------------------------

const TYPES = { INT32: 1, INT64: 2, FLOAT: 4, DOUBLE: 5, BYTE_ARRAY: 6 };
const ENC = { PLAIN: 0, PLAIN_DICTIONARY: 2, RLE: 3, BIT_PACKED: 4, RLE_DICTIONARY: 8 };
const CODEC = { UNCOMPRESSED: 0, GZIP: 2, BROTLI: 4, LZ4_RAW: 7 };

function plain(type, values) {
  const parts = values.map((v) => {
    switch (type) {
      case 'INT32': { const b = Buffer.alloc(4); b.writeInt32LE(Number(v)); return b; }
      case 'INT64': { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(v)); return b; }
      case 'FLOAT': { const b = Buffer.alloc(4); b.writeFloatLE(v); return b; }
      case 'DOUBLE': { const b = Buffer.alloc(8); b.writeDoubleLE(v); return b; }
      default: { const s = Buffer.from(v, 'utf8'); const l = Buffer.alloc(4); l.writeUInt32LE(s.length); return Buffer.concat([l, s]); }
    }
  });
  return Buffer.concat(parts);
}

// The RLE/bit-packed hybrid, alternating between the two run kinds so that a
// reader meets both: runs of 8 or more equal values are RLE, the rest
// bit-packed in groups of 8 (the last group padded with zeros).
function hybrid(values, bw) {
  const out = [];
  let i = 0;
  while (i < values.length) {
    let j = i;
    while (j < values.length && values[j] === values[i]) j++;
    if (j - i >= 8) {
      varint(out, (j - i) << 1);
      let v = values[i];
      for (let k = 0; k < Math.ceil(bw / 8); k++) { out.push(v & 0xff); v = Math.floor(v / 256); }
      i = j;
      continue;
    }
    // Bit-pack until the next run of 8 equal values. A bit-packed run holds
    // whole groups of 8 values, so it takes values from that next run too,
    // and only the very last run is padded.
    let end = i;
    while (end < values.length) {
      let r = end;
      while (r < values.length && values[r] === values[end]) r++;
      if (r - end >= 8) break;
      end = r;
    }
    const groups = Math.ceil((end - i) / 8);
    const take = Math.min(groups * 8, values.length - i);
    varint(out, (groups << 1) | 1);
    const bits = [];
    for (let k = 0; k < groups * 8; k++) {
      const v = k < take ? values[i + k] : 0;
      for (let b = 0; b < bw; b++) bits.push((v >> b) & 1);
    }
    for (let k = 0; k < bits.length; k += 8) {
      let byte = 0;
      for (let b = 0; b < 8; b++) byte |= (bits[k + b] || 0) << b;
      out.push(byte);
    }
    i += take;
  }
  return Buffer.from(out);
}

// The deprecated BIT_PACKED levels: most significant bit first, no header.
function bitPackedMsb(values, bw) {
  const out = Buffer.alloc(Math.ceil((values.length * bw) / 8));
  let bit = 0;
  for (const v of values) {
    for (let b = bw - 1; b >= 0; b--, bit++) if ((v >> b) & 1) out[bit >> 3] |= 0x80 >> (bit & 7);
  }
  return out;
}

const bitWidth = (max) => (max <= 0 ? 0 : Math.floor(Math.log2(max)) + 1);

// ---- pages and chunks -----------------------------------------------------------

function pageHeader(h) {
  return thrift([
    [1, 'i32', h.type],
    [2, 'i32', h.uncompressed],
    [3, 'i32', h.compressed],
    [5, 'struct', h.v1 && [[1, 'i32', h.v1.numValues], [2, 'i32', h.v1.encoding], [3, 'i32', h.v1.defEncoding], [4, 'i32', ENC.RLE]]],
    [7, 'struct', h.dict && [[1, 'i32', h.dict.numValues], [2, 'i32', h.dict.encoding]]],
    [8, 'struct', h.v2 && [[1, 'i32', h.v2.numValues], [2, 'i32', h.v2.numNulls], [3, 'i32', h.v2.numRows],
      [4, 'i32', h.v2.encoding], [5, 'i32', h.v2.defLen], [6, 'i32', h.v2.repLen], [7, 'bool', h.v2.isCompressed]]],
  ]);
}

// Does an LZ4 block of n bytes keep the format's rules for its end: the last
// match starts at least 12 bytes before the end, the last 5 bytes are
// literals? (lz4js's compressor can break the first; liblz4 then refuses
// the block, rightly.)
function lz4EndRulesKept(z, n) {
  let ip = 0, op = 0, lastStart = -1, lastEnd = 0;
  const length = (len) => {
    if (len !== 15) return len;
    let b;
    do { b = z[ip++]; len += b; } while (b === 255);
    return len;
  };
  while (ip < z.length) {
    const token = z[ip++];
    const lit = length(token >> 4);
    ip += lit;
    op += lit;
    if (ip >= z.length) break; // the last sequence: literals alone
    ip += 2;
    const ml = length(token & 15) + 4;
    lastStart = op;
    op += ml;
    lastEnd = op;
  }
  return lastStart < 0 || (lastStart <= n - 12 && lastEnd <= n - 5);
}

// One bare LZ4 block (the LZ4_RAW codec), by lz4js. When lz4js finds no
// match (a short page) it writes nothing, and when its block breaks the
// rules for the end, a block of literals alone stands in: one sequence, its
// length in the token's high nibble, 15 or more continued in bytes of 255
// and a last byte below 255.
export function lz4Block(b) {
  const dst = new Uint8Array(lz4js.compressBound(b.length));
  const n = lz4js.compressBlock(b, dst, 0, b.length, new Uint32Array(1 << 16));
  if (n > 0 && lz4EndRulesKept(dst.subarray(0, n), b.length)) return Buffer.from(dst.subarray(0, n));
  const head = [];
  if (b.length < 15) {
    head.push(b.length << 4);
  } else {
    head.push(0xf0);
    let k = b.length - 15;
    for (; k >= 255; k -= 255) head.push(255);
    head.push(k);
  }
  return Buffer.concat([Buffer.from(head), Buffer.from(b)]);
}

function compress(codec, buf) {
  switch (codec) {
    case 'GZIP': return zlib.gzipSync(buf);
    case 'BROTLI': return zlib.brotliCompressSync(buf);
    case 'LZ4_RAW': return lz4Block(buf);
    default: return buf;
  }
}

// One column chunk. col: {name, type, optional, encoding: 'PLAIN' | 'DICT',
// dictLabel, pageVersion, defEncoding, codec, rowsPerPage}; values with nulls.
// Returns the bytes and what the metadata needs; f (faults) may break things.
function columnChunk(col, values, f = {}) {
  const parts = [];
  let offset = 0;
  const add = (b) => { parts.push(b); offset += b.length; };
  const codec = f.codec || col.codec || 'UNCOMPRESSED';
  let dictPageAt = null, dict = null, index = null;
  if (col.encoding === 'DICT') {
    dict = [];
    const seen = new Map();
    index = values.map((v) => {
      if (v === null) return null;
      const key = typeof v === 'bigint' ? `n${v}` : `${typeof v}:${v}`;
      if (!seen.has(key)) { seen.set(key, dict.length); dict.push(v); }
      return seen.get(key);
    });
    const body = plain(col.type, dict);
    const comp = compress(codec, body);
    dictPageAt = offset;
    add(pageHeader({ type: 2, uncompressed: body.length, compressed: comp.length,
      dict: { numValues: dict.length, encoding: ENC.PLAIN } }));
    add(comp);
  }
  const dataPageAt = offset;
  const perPage = col.rowsPerPage || values.length;
  for (let start = 0, page = 0; start < values.length; start += perPage, page++) {
    const rows = values.slice(start, start + perPage);
    const defs = rows.map((v) => (v === null ? 0 : 1));
    if (f.badDefLevel && page === 0) defs[1] = 2;
    const present = rows.filter((v) => v !== null);
    let valueBytes, encoding;
    if (col.encoding === 'DICT') {
      const idx = index.slice(start, start + perPage).filter((v) => v !== null);
      if (f.dictIndexOutOfRange && page === 0) idx[idx.length - 1] = dict.length;
      let bw = bitWidth(dict.length - 1);
      if (f.dictIndexOutOfRange) bw = bitWidth(dict.length);
      const runs = hybrid(idx, bw);
      valueBytes = Buffer.concat([Buffer.from([f.badBitWidth ? 40 : bw]), runs]);
      encoding = col.dictLabel === 'PLAIN_DICTIONARY' ? ENC.PLAIN_DICTIONARY : ENC.RLE_DICTIONARY;
    } else {
      valueBytes = plain(col.type, present);
      if (f.shortValues && page === 0) valueBytes = valueBytes.subarray(0, valueBytes.length - 3);
      encoding = ENC.PLAIN;
    }
    if (f.unknownEncoding && page === 0) encoding = 42;
    const numValues = rows.length + (f.tooManyValues && page === 0 ? 1000 : 0);
    if ((col.pageVersion || 1) === 1) {
      let levels = Buffer.alloc(0);
      const defEncoding = col.defEncoding === 'BIT_PACKED' ? ENC.BIT_PACKED : ENC.RLE;
      if (col.optional) {
        if (defEncoding === ENC.BIT_PACKED) {
          levels = bitPackedMsb(defs, 1);
        } else {
          if (f.badDefLevel) { // declare bit width 1 but store a level of 2 in an RLE run
            const b = [];
            varint(b, 2 << 1); b.push(2);
            varint(b, (rows.length - 2) << 1); b.push(1);
            levels = Buffer.concat([Buffer.from([b.length, 0, 0, 0]), Buffer.from(b)]);
          } else {
            const runs = hybrid(defs, 1);
            const len = Buffer.alloc(4); len.writeUInt32LE(runs.length);
            levels = Buffer.concat([len, runs]);
          }
        }
      }
      const body = Buffer.concat([levels, valueBytes]);
      const comp = compress(codec, body);
      add(pageHeader({ type: 0, uncompressed: body.length + (f.wrongUncompressedSize ? 7 : 0) + (f.uncompressedExtra || 0),
        compressed: comp.length + (f.pageTooLong && page === 0 ? 1 << 20 : 0),
        v1: { numValues, encoding, defEncoding } }));
      add(comp);
    } else {
      const levels = col.optional ? hybrid(defs, 1) : Buffer.alloc(0);
      const comp = compress(codec, valueBytes);
      add(pageHeader({ type: 3, uncompressed: levels.length + valueBytes.length,
        compressed: levels.length + comp.length,
        v2: { numValues, numNulls: rows.length - present.length, numRows: numValues, encoding,
          defLen: levels.length, repLen: 0, isCompressed: codec === 'UNCOMPRESSED' ? false : undefined } }));
      add(levels);
      add(comp);
    }
  }
  return { bytes: Buffer.concat(parts), dictPageAt, dataPageAt, codec };
}

function schemaElements(columns, f) {
  const root = [[4, 'bin', 'schema'], [5, 'i32', columns.length + (f.schemaTooShort ? 2 : 0)]];
  return [root, ...columns.map((c) => [
    [1, 'i32', TYPES[c.type]],
    [3, 'i32', c.optional ? 1 : 0],
    [4, 'bin', c.name],
  ])];
}

// columns: as for columnChunk; rowGroups: [{rows: [{name: value}]}].
// dictOffset per column: 'set' (default), 'omit' (no field; data_page_offset
// then points at the dictionary page) or 'zero' (field written as 0, same).
// faults: {where: {column, rowGroup}, ...flags} breaks one column chunk, or
// file-level flags (badMagicHead, ...), applied in buildFile.
export function buildFile({ columns, rowGroups, faults = {} }) {
  const parts = [Buffer.from('PAR1')];
  let offset = 4;
  const rgMeta = [];
  let total = 0;
  rowGroups.forEach((rg, g) => {
    let rgBytes = 0;
    const chunks = columns.map((c) => {
      const f = faults.where && faults.where.column === c.name && faults.where.rowGroup === g ? faults : {};
      const values = rg.rows.map((r) => r[c.name]);
      const ch = columnChunk(c, values, f);
      const start = offset;
      parts.push(ch.bytes);
      offset += ch.bytes.length;
      let dictOff = ch.dictPageAt === null ? undefined : start + ch.dictPageAt;
      let dataOff = start + ch.dataPageAt;
      if (dictOff !== undefined && c.dictOffset === 'omit') { dataOff = dictOff; dictOff = undefined; }
      if (dictOff !== undefined && c.dictOffset === 'zero') { dataOff = dictOff; dictOff = 0; }
      if (f.chunkPastEnd) dataOff = 1 << 30;
      const codecId = f.unknownCodec ? 42 : f.codecId ?? CODEC[ch.codec];
      const meta = [
        [1, 'i32', TYPES[f.wrongType ? 'INT32' : c.type]],
        [2, ['list', 'i32'], [ENC.PLAIN, ENC.RLE]],
        [3, ['list', 'bin'], [c.name]],
        [4, 'i32', codecId],
        [5, 'i64', rg.rows.length + (f.chunkValuesMismatch ? 1 : 0)],
        [6, 'i64', ch.bytes.length],
        [7, 'i64', ch.bytes.length],
        [9, 'i64', dataOff],
        [11, 'i64', dictOff],
      ];
      rgBytes += ch.bytes.length;
      return [[2, 'i64', start], [3, 'struct', meta]];
    });
    rgMeta.push([[1, ['list', 'struct'], chunks], [2, 'i64', rgBytes], [3, 'i64', rg.rows.length]]);
    total += rg.rows.length;
  });
  let meta = thrift([
    [1, 'i32', 1],
    [2, ['list', 'struct'], schemaElements(columns, faults)],
    [3, 'i64', total],
    [4, ['list', 'struct'], rgMeta],
    [6, 'bin', 'lcmon own_writer.mjs'],
  ]);
  if (faults.metadataCut) meta = meta.subarray(0, meta.length - faults.metadataCut);
  const len = Buffer.alloc(4);
  len.writeUInt32LE(meta.length);
  let file = Buffer.concat([...parts, meta, len, Buffer.from('PAR1')]);
  if (faults.badMagicHead) file.write('PAR0', 0);
  if (faults.badMagicTail) file.write('PARX', file.length - 4);
  if (faults.footerLenPastEnd) file.writeUInt32LE(file.length, file.length - 8);
  if (faults.truncateTo) file = file.subarray(0, faults.truncateTo(file.length));
  if (faults.pageHeaderGarbage) { // the first byte of the first page header: wire type 15
    file[4] = 0x1f;
  }
  return file;
}
