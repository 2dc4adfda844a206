// Generate the Parquet fixtures of tests/format/test_parquet.c.
//
//   cd tests/parquet && npm install && node generate.mjs && rm -rf node_modules
//
// Three independent writers from the npm registry make the good files, each
// with the options it offers (see README.md for what each covers):
//   - DuckDB (@duckdb/node-api, the C++ engine): COPY ... (FORMAT parquet).
//   - hyparquet-writer (pure JavaScript).
//   - parquet-wasm (the Rust arrow-rs writer compiled to WebAssembly), fed
//     Arrow tables built with apache-arrow.
// The codecs come with the writers, except hyparquet-writer's GZIP, BROTLI
// (node's zlib) and LZ4 (lz4js, pure JavaScript: LZ4 frames and raw blocks).
// Our own byte-level writer (own_writer.mjs) makes what none of them does
// (a dictionary page offset left unset, BIT_PACKED definition levels) and the
// malformed files in fixtures/bad/, each with one known defect.
//
// Every good fixture x.parquet comes with x.tsv.gz: the values the writer was
// given, one row per line, a header of column names, \N for null. Doubles are
// written in JavaScript's shortest round-trip form, floats as the double
// value of the float the writer stores (Math.fround), so that the C test can
// compare exactly. The output is deterministic (seeded random numbers).

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { parquetWriteFile } from 'hyparquet-writer';
import * as pw from 'parquet-wasm/node';
import * as arrow from 'apache-arrow';
import lz4js from 'lz4js';
import { GAMES, positions } from './chess.mjs';
import { buildFile, lz4Block } from './own_writer.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(HERE, 'fixtures');
const BAD = path.join(OUT, 'bad');
fs.mkdirSync(BAD, { recursive: true });
for (const d of [OUT, BAD]) {
  for (const f of fs.readdirSync(d)) if (/\.(parquet|tsv|tsv\.gz)$/.test(f)) fs.unlinkSync(path.join(d, f));
}

// ---- the rows -----------------------------------------------------------------

function rng(seed) { // mulberry32
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const GAME_LIST = Object.values(GAMES).map(positions);
const ALT_MOVES = ['e2e4', 'd2d4', 'g1f3', 'c2c4', 'e7e5', 'c7c5', 'g8f6', 'e1h1', 'a7a8q'];

// Rows of `games` games cycling through the real games above. Per row: the
// position, the played move, a best move (usually the played one), and
// win/draw/loss, all three null on some rows, one of them null on a few.
function gameRows({ games, seed, plyBase = 0, intIds = false, shuffle = false, nulls = true }) {
  const r = rng(seed);
  const rows = [];
  for (let g = 0; g < games; g++) {
    const ps = GAME_LIST[g % GAME_LIST.length];
    const id = intIds ? 1000000000000n + BigInt(g) * 7919n : `g${String(seed).padStart(3, '0')}-${String(g).padStart(5, '0')}`;
    const gameRowsList = ps.map((p, i) => {
      let win = r(), draw = r() * (1 - win), loss = 1 - win - draw;
      const u = r();
      if (nulls && u < 0.1) win = draw = loss = null;
      else if (nulls && u < 0.13) [win, draw, loss][Math.floor(r() * 3)] = null;
      const best = r() < 0.7 ? p.move : ALT_MOVES[Math.floor(r() * ALT_MOVES.length)];
      const row = { game_id: id, ply: plyBase + i, fen: p.fen, played_move: p.move, best_move: best, win, draw, loss };
      if (nulls && u >= 0.1 && u < 0.13) { // exactly one of the three null
        const k = ['win', 'draw', 'loss'][Math.floor(r() * 3)];
        row[k] = null;
      }
      return row;
    });
    rows.push(...gameRowsList);
  }
  if (shuffle) {
    for (let i = rows.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [rows[i], rows[j]] = [rows[j], rows[i]];
    }
  }
  return rows;
}

const GAME_COLUMNS = [
  { name: 'game_id', kind: 'string' },
  { name: 'ply', kind: 'int64' },
  { name: 'fen', kind: 'string' },
  { name: 'played_move', kind: 'string' },
  { name: 'best_move', kind: 'string' },
  { name: 'win', kind: 'double' },
  { name: 'draw', kind: 'double' },
  { name: 'loss', kind: 'double' },
];

const withKinds = (cols, kinds) => cols.map((c) => ({ ...c, kind: kinds[c.name] || c.kind }));

// ---- expected values ------------------------------------------------------------

function cell(kind, v) {
  if (v === null || v === undefined) return '\\N';
  switch (kind) {
    case 'string':
      if (/[\t\n\r\\]/.test(v)) throw new Error(`string needs escaping: ${v}`);
      return v;
    case 'int32':
    case 'int64':
      return String(v);
    case 'float':
      return String(Math.fround(v));
    default:
      return String(v);
  }
}

// Gzipped to keep the repository small (zcat shows them); gzipSync writes no
// time stamp, so the bytes are reproducible.
function writeTsv(name, columns, rows) {
  const lines = [columns.map((c) => c.name).join('\t')];
  for (const row of rows) lines.push(columns.map((c) => cell(c.kind, row[c.name])).join('\t'));
  fs.writeFileSync(path.join(OUT, `${name}.tsv.gz`), zlib.gzipSync(lines.join('\n') + '\n', { level: 9 }));
}

// ---- DuckDB -----------------------------------------------------------------------

const duck = await (await DuckDBInstance.create(':memory:')).connect();
const SQL_TYPE = { string: 'VARCHAR', int32: 'INTEGER', int64: 'BIGINT', double: 'DOUBLE', float: 'FLOAT' };

// DuckDB reads the TSV itself, so what it writes is exactly what the TSV says.
async function duckdb(name, columns, rows, { copyOptions, select = '*' }) {
  writeTsv(name, columns, rows);
  const tsv = path.join(OUT, `${name}.tsv.gz`);
  const types = columns.map((c) => `'${c.name}': '${SQL_TYPE[c.kind]}'`).join(', ');
  await duck.run(`CREATE OR REPLACE TABLE t AS SELECT * FROM read_csv('${tsv}', delim = '\t', header = true,
    quote = '', escape = '', nullstr = '\\N', auto_detect = false, columns = {${types}})`);
  await duck.run(`COPY (SELECT ${select} FROM t) TO '${path.join(OUT, name)}.parquet' (FORMAT parquet, ${copyOptions})`);
}

{
  const rows = gameRows({ games: 130, seed: 1 });
  await duckdb('duckdb_snappy_rowgroups', GAME_COLUMNS, rows, { copyOptions: 'COMPRESSION snappy, ROW_GROUP_SIZE 100' });
}
{
  // Extra columns around the game columns, some of them unreadable for us
  // (a list, a struct, a boolean), which must be skipped gracefully.
  const r = rng(2);
  const rows = gameRows({ games: 80, seed: 2 }).map((row, i) => ({
    ...row,
    site: `https://example.org/game/${row.game_id}`,
    white_elo: i % 11 === 0 ? null : 1200 + Math.floor(r() * 1600),
    eval_cp: i % 13 === 0 ? null : BigInt(Math.floor(r() * 2000) - 1000),
  }));
  const cols = [{ name: 'site', kind: 'string' }, ...GAME_COLUMNS, { name: 'white_elo', kind: 'int32' }, { name: 'eval_cp', kind: 'int64' }];
  await duckdb('duckdb_zstd_extra_columns', cols, rows, {
    copyOptions: 'COMPRESSION zstd',
    select: `site, game_id, ply, fen, [played_move, best_move] AS tags, played_move,
      {'depth': ply + 10, 'engine': 'sf'} AS info, best_move, ply % 2 = 0 AS is_white, win, draw, loss,
      white_elo, eval_cp`,
  });
}
{
  const rows = gameRows({ games: 60, seed: 3, plyBase: 1 });
  await duckdb('duckdb_gzip_ply1', GAME_COLUMNS, rows, { copyOptions: 'COMPRESSION gzip' });
}
{
  const rows = gameRows({ games: 60, seed: 4, shuffle: true });
  await duckdb('duckdb_uncompressed_shuffled', GAME_COLUMNS, rows, { copyOptions: 'COMPRESSION uncompressed' });
}
{
  // Parquet format v2 encodings, int64 game ids, int32 ply, float outcomes;
  // "note" and "seq" are unique per row, so they are not dictionary-encoded.
  const rows = gameRows({ games: 130, seed: 5, intIds: true }).map((row, i) => ({
    ...row, note: `row ${i} of game ${row.game_id}`, seq: i % 9 === 4 ? null : BigInt(i) * 7919n - 5000000n,
  }));
  const cols = [...withKinds(GAME_COLUMNS, { game_id: 'int64', ply: 'int32', win: 'float', draw: 'float', loss: 'float' }),
    { name: 'note', kind: 'string' }, { name: 'seq', kind: 'int64' }];
  await duckdb('duckdb_v2_zstd_types', cols, rows, { copyOptions: 'COMPRESSION zstd, PARQUET_VERSION v2, ROW_GROUP_SIZE 100' });
}
{
  // DuckDB's 'lz4' is Parquet's LZ4_RAW (a bare LZ4 block per page).
  const rows = gameRows({ games: 8, seed: 15 });
  await duckdb('duckdb_lz4_raw', GAME_COLUMNS, rows, { copyOptions: 'COMPRESSION lz4, ROW_GROUP_SIZE 100' });
}
{
  const rows = gameRows({ games: 8, seed: 16 });
  await duckdb('duckdb_brotli', GAME_COLUMNS, rows, { copyOptions: 'COMPRESSION brotli' });
}

// ---- hyparquet-writer --------------------------------------------------------------

const HYPARQUET_TYPE = { string: 'STRING', int32: 'INT32', int64: 'INT64', double: 'DOUBLE', float: 'FLOAT' };
const hyValue = (kind, v) => (v === null ? null : kind === 'int64' ? BigInt(v) : v);

function hyparquet(name, columns, rows, options) {
  writeTsv(name, columns, rows);
  parquetWriteFile({
    filename: path.join(OUT, `${name}.parquet`),
    columnData: columns.map((c) => ({
      name: c.name,
      type: HYPARQUET_TYPE[c.kind],
      data: rows.map((row) => hyValue(c.kind, row[c.name])),
      ...(c.encoding ? { encoding: c.encoding } : {}),
      ...(c.required ? { nullable: false } : {}),
    })),
    ...options,
  });
}

{
  const rows = gameRows({ games: 40, seed: 6 });
  hyparquet('hyparquet_v2_snappy', GAME_COLUMNS, rows, { codec: 'SNAPPY', rowGroupSize: [100, 300], pageSize: 1024 });
}
{
  const rows = gameRows({ games: 40, seed: 7 });
  const enc = { game_id: 'DELTA_BYTE_ARRAY', ply: 'DELTA_BINARY_PACKED', fen: 'DELTA_BYTE_ARRAY',
    played_move: 'DELTA_LENGTH_BYTE_ARRAY', best_move: 'DELTA_LENGTH_BYTE_ARRAY',
    win: 'BYTE_STREAM_SPLIT', draw: 'BYTE_STREAM_SPLIT', loss: 'BYTE_STREAM_SPLIT' };
  hyparquet('hyparquet_delta_gzip', GAME_COLUMNS.map((c) => ({ ...c, encoding: enc[c.name] })), rows, {
    codec: 'GZIP', compressors: { GZIP: (b) => zlib.gzipSync(b) }, rowGroupSize: 400, pageSize: 2048,
  });
}
{
  // Required columns, int64 ids, int32 ply, float outcomes, and integers that
  // stress DELTA_BINARY_PACKED: negative, and 64-bit wide deltas.
  const r = rng(8);
  const rows = gameRows({ games: 30, seed: 8, intIds: true }).map((row, i) => ({
    ...row,
    eval_cp: i % 17 === 5 ? null : Math.floor(r() * 4000) - 2000,
    nodes: i % 3 === 0 ? -(2n ** 62n) + BigInt(i) : i % 3 === 1 ? 2n ** 62n - BigInt(i * 12345) : BigInt(i),
  }));
  const cols = [
    { name: 'game_id', kind: 'int64', encoding: 'DELTA_BINARY_PACKED', required: true },
    { name: 'ply', kind: 'int32', encoding: 'DELTA_BINARY_PACKED', required: true },
    { name: 'fen', kind: 'string', required: true },
    { name: 'played_move', kind: 'string' },
    { name: 'best_move', kind: 'string' },
    { name: 'win', kind: 'float', encoding: 'BYTE_STREAM_SPLIT' },
    { name: 'draw', kind: 'float', encoding: 'BYTE_STREAM_SPLIT' },
    { name: 'loss', kind: 'float', encoding: 'BYTE_STREAM_SPLIT' },
    { name: 'eval_cp', kind: 'int32', encoding: 'DELTA_BINARY_PACKED' },
    { name: 'nodes', kind: 'int64', encoding: 'DELTA_BINARY_PACKED' },
  ];
  hyparquet('hyparquet_types_uncompressed', cols, rows, { codec: 'UNCOMPRESSED', rowGroupSize: 1000, pageSize: 1500 });
}

// The deprecated LZ4 as other writers wrote it before Hadoop's framing won:
// an LZ4 frame (lz4js's frames mix compressed and stored blocks), or a bare
// block (own_writer.mjs's lz4Block: lz4js's, or literals alone).
const lz4Frame = (b) => Uint8Array.from(lz4js.compress(b));

{
  const rows = gameRows({ games: 6, seed: 19 });
  hyparquet('hyparquet_lz4_frame', GAME_COLUMNS, rows, {
    codec: 'LZ4', compressors: { LZ4: lz4Frame }, rowGroupSize: 200, pageSize: 1024,
  });
}
{
  const rows = gameRows({ games: 4, seed: 20 });
  hyparquet('hyparquet_lz4_block', GAME_COLUMNS, rows, {
    codec: 'LZ4', compressors: { LZ4: lz4Block }, pageSize: 1024,
  });
}
{
  const rows = gameRows({ games: 4, seed: 21 });
  hyparquet('hyparquet_brotli', GAME_COLUMNS, rows, {
    codec: 'BROTLI', pageSize: 1024,
    compressors: { BROTLI: (b) => zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 9 } }) },
  });
}

// ---- parquet-wasm (arrow-rs) -------------------------------------------------------

const ARROW_TYPE = {
  string: () => new arrow.Utf8(), int32: () => new arrow.Int32(), int64: () => new arrow.Int64(),
  double: () => new arrow.Float64(), float: () => new arrow.Float32(),
};

function arrowWrite(name, columns, rows, props) {
  writeTsv(name, columns, rows);
  const vectors = {};
  for (const c of columns) {
    vectors[c.name] = arrow.vectorFromArray(rows.map((row) => hyValue(c.kind, row[c.name])), ARROW_TYPE[c.kind]());
  }
  const table = pw.Table.fromIPCStream(arrow.tableToIPC(new arrow.Table(vectors), 'stream'));
  fs.writeFileSync(path.join(OUT, `${name}.parquet`), pw.writeParquet(table, props));
}

// FENs made unique per row (the move counter), so that the dictionary
// overflows its page size limit partway through the column chunk and the
// writer falls back to plain (v1) or DELTA_BYTE_ARRAY (v2) pages, as pyarrow
// does on real files.
const uniqueFens = (rows) => rows.map((row, i) => ({ ...row, fen: row.fen.replace(/ \d+$/, ` ${1000 + i}`) }));

{
  const rows = uniqueFens(gameRows({ games: 70, seed: 9 }));
  arrowWrite('arrow_fallback_v1_snappy', GAME_COLUMNS, rows, new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.SNAPPY).setWriterVersion(pw.WriterVersion.V1)
    .setDictionaryPageSizeLimit(2048).setWriteBatchSize(64).setDataPageSizeLimit(4096)
    .setMaxRowGroupSize(500).build());
}
{
  const rows = uniqueFens(gameRows({ games: 70, seed: 10 }));
  arrowWrite('arrow_fallback_v2_zstd', GAME_COLUMNS, rows, new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.ZSTD).setWriterVersion(pw.WriterVersion.V2)
    .setDictionaryPageSizeLimit(2048).setWriteBatchSize(64).setDataPageSizeLimit(4096)
    .setMaxRowGroupSize(500).build());
}
{
  const rows = gameRows({ games: 60, seed: 11, intIds: true });
  const cols = withKinds(GAME_COLUMNS, { game_id: 'int64', ply: 'int32', win: 'float', draw: 'float', loss: 'float' });
  arrowWrite('arrow_v2_gzip_delta', cols, rows, new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.GZIP).setWriterVersion(pw.WriterVersion.V2).setDictionaryEnabled(false)
    .setColumnEncoding('game_id', pw.Encoding.DELTA_BINARY_PACKED)
    .setColumnEncoding('ply', pw.Encoding.DELTA_BINARY_PACKED)
    .setColumnEncoding('fen', pw.Encoding.DELTA_BYTE_ARRAY)
    .setColumnEncoding('played_move', pw.Encoding.DELTA_LENGTH_BYTE_ARRAY)
    .setColumnEncoding('win', pw.Encoding.BYTE_STREAM_SPLIT)
    .setColumnEncoding('draw', pw.Encoding.BYTE_STREAM_SPLIT)
    .setColumnEncoding('loss', pw.Encoding.BYTE_STREAM_SPLIT)
    .setDataPageSizeLimit(2048).setMaxRowGroupSize(400).build());
}
{
  // LZ4_RAW with the writer's defaults (a build without liblz4 refuses it).
  const rows = gameRows({ games: 5, seed: 12 });
  arrowWrite('arrow_lz4_raw', GAME_COLUMNS, rows, new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.LZ4_RAW).build());
}
{
  // The deprecated LZ4, which arrow-rs writes in Hadoop's framing: [size
  // decompressed][size compressed] (big-endian 32-bit) before a raw block.
  const rows = gameRows({ games: 6, seed: 17 });
  arrowWrite('arrow_lz4_hadoop', GAME_COLUMNS, rows, new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.LZ4).build());
}
{
  // BROTLI in v2 pages (levels outside the compressed part).
  const rows = gameRows({ games: 6, seed: 18 });
  arrowWrite('arrow_brotli_v2', GAME_COLUMNS, rows, new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.BROTLI).setWriterVersion(pw.WriterVersion.V2)
    .setDataPageSizeLimit(2048).build());
}

// ---- our own byte-level writer -----------------------------------------------------

{
  const rows = gameRows({ games: 12, seed: 13 });
  const columns = [
    // Dictionary page at the data page offset, dictionary_page_offset absent.
    { name: 'game_id', type: 'BYTE_ARRAY', optional: true, encoding: 'DICT', dictOffset: 'omit', rowsPerPage: 50 },
    // dictionary_page_offset written as 0, PLAIN_DICTIONARY label, v2 pages.
    { name: 'fen', type: 'BYTE_ARRAY', optional: true, encoding: 'DICT', dictLabel: 'PLAIN_DICTIONARY', dictOffset: 'zero', pageVersion: 2, rowsPerPage: 40 },
    { name: 'ply', type: 'INT64', optional: false, encoding: 'PLAIN' },
    { name: 'played_move', type: 'BYTE_ARRAY', optional: true, encoding: 'PLAIN', codec: 'GZIP', rowsPerPage: 64 },
    { name: 'best_move', type: 'BYTE_ARRAY', optional: true, encoding: 'DICT', pageVersion: 2, codec: 'GZIP' },
    // The deprecated BIT_PACKED definition levels.
    { name: 'win', type: 'DOUBLE', optional: true, encoding: 'PLAIN', defEncoding: 'BIT_PACKED', rowsPerPage: 33 },
    { name: 'draw', type: 'DOUBLE', optional: true, encoding: 'DICT', pageVersion: 2 },
    { name: 'loss', type: 'FLOAT', optional: true, encoding: 'PLAIN', rowsPerPage: 70 },
  ];
  const kinds = { game_id: 'string', fen: 'string', ply: 'int64', played_move: 'string', best_move: 'string', win: 'double', draw: 'double', loss: 'float' };
  const half = Math.floor(rows.length / 2);
  const file = buildFile({ columns, rowGroups: [{ rows: rows.slice(0, half) }, { rows: rows.slice(half) }] });
  fs.writeFileSync(path.join(OUT, 'own_dictionary_offsets.parquet'), file);
  writeTsv('own_dictionary_offsets', columns.map((c) => ({ name: c.name, kind: kinds[c.name] })), rows);
}

// Malformed files: a small valid file with one defect each. The C test knows
// which error each must give and what its message must name.
{
  const rows = gameRows({ games: 6, seed: 14 });
  const columns = [
    { name: 'game_id', type: 'BYTE_ARRAY', optional: true, encoding: 'DICT', rowsPerPage: 20 },
    { name: 'ply', type: 'INT64', optional: false, encoding: 'PLAIN' },
    { name: 'win', type: 'DOUBLE', optional: true, encoding: 'PLAIN' },
    { name: 'draw', type: 'DOUBLE', optional: true, encoding: 'PLAIN', codec: 'GZIP' },
  ];
  const half = Math.floor(rows.length / 2);
  const rowGroups = [{ rows: rows.slice(0, half) }, { rows: rows.slice(half) }];
  const bad = (name, faults) => fs.writeFileSync(path.join(BAD, `${name}.parquet`), buildFile({ columns, rowGroups, faults }));
  bad('good', {});
  bad('bad_magic_head', { badMagicHead: true });
  bad('bad_magic_tail', { badMagicTail: true });
  bad('truncated', { truncateTo: (n) => Math.floor(n * 0.6) });
  bad('footer_length_past_end', { footerLenPastEnd: true });
  bad('metadata_cut', { metadataCut: 25 });
  bad('schema_too_short', { schemaTooShort: true });
  bad('chunk_type_mismatch', { where: { column: 'ply', rowGroup: 1 }, wrongType: true });
  bad('unknown_codec', { where: { column: 'win', rowGroup: 1 }, unknownCodec: true });
  bad('unknown_encoding', { where: { column: 'ply', rowGroup: 0 }, unknownEncoding: true });
  bad('page_past_chunk', { where: { column: 'game_id', rowGroup: 1 }, pageTooLong: true });
  bad('chunk_past_end', { where: { column: 'ply', rowGroup: 1 }, chunkPastEnd: true });
  bad('dictionary_index_out_of_range', { where: { column: 'game_id', rowGroup: 0 }, dictIndexOutOfRange: true });
  bad('impossible_bit_width', { where: { column: 'game_id', rowGroup: 1 }, badBitWidth: true });
  bad('impossible_definition_level', { where: { column: 'win', rowGroup: 0 }, badDefLevel: true });
  bad('gzip_wrong_size', { where: { column: 'draw', rowGroup: 1 }, wrongUncompressedSize: true });
  bad('lz4_raw_wrong_size', { where: { column: 'draw', rowGroup: 1 }, codec: 'LZ4_RAW', wrongUncompressedSize: true });
  bad('brotli_wrong_size', { where: { column: 'draw', rowGroup: 1 }, codec: 'BROTLI', wrongUncompressedSize: true });
  bad('lz4_raw_page_too_large', { where: { column: 'draw', rowGroup: 1 }, codec: 'LZ4_RAW', uncompressedExtra: 1 << 20 });
  bad('lzo_codec', { where: { column: 'win', rowGroup: 1 }, codecId: 3 });
  bad('uncompressed_wrong_size', { where: { column: 'win', rowGroup: 1 }, wrongUncompressedSize: true });
  bad('values_short', { where: { column: 'ply', rowGroup: 0 }, shortValues: true });
  bad('chunk_values_mismatch', { where: { column: 'draw', rowGroup: 0 }, chunkValuesMismatch: true });
  bad('too_many_values', { where: { column: 'win', rowGroup: 0 }, tooManyValues: true });
  bad('page_header_garbage', { pageHeaderGarbage: true });
}

let total = 0;
for (const d of [OUT, BAD]) {
  for (const f of fs.readdirSync(d).filter((n) => /\.(parquet|tsv\.gz)$/.test(n))) {
    const size = fs.statSync(path.join(d, f)).size;
    total += size;
    console.log(`${String(size).padStart(8)}  ${path.relative(OUT, path.join(d, f))}`);
  }
}
console.log(`${String(total).padStart(8)}  in all`);
