// Writes the parquet test files of tests/test_parquet.c with third-party
// writers (never with equishard's own code), and their truth from the inputs.
//
//   mkdir -p /tmp/pq && cd /tmp/pq && npm install parquet-wasm@0.8.0 apache-arrow@21.2.0 \
//       hyparquet@1.33.0 hyparquet-compressors@1.1.2 hyparquet-writer@0.17.0 @dsnp/parquetjs@1.8.9
//   PQ_NODE_MODULES=/tmp/pq/node_modules node tests/data/parquet/make.mjs
//
// Every file holds the same six utterances of corpus A (tests/fixtures/corpus_a),
// with the CosyVoice columns (utt, audio_data, wav, text, spk, utt_embedding,
// spk_embedding, speech_token) and the awkward cases a reader must get right:
// a null text, an empty text, null and empty lists, a null speaker, a null
// element and a NaN inside an embedding, FLAC and WAV audio, multi-byte UTF-8.
// The files differ in writer, codec, page version, encodings, row groups and
// page sizes (see VARIANTS). Each file is read back with hyparquet (a third
// independent implementation) and compared with the inputs before truth.tsv is
// written. Deterministic: same inputs, same bytes.
import fs from 'fs'
import path from 'path'
import { createRequire } from 'module'
import { fileURLToPath, pathToFileURL } from 'url'

const here = path.dirname(fileURLToPath(import.meta.url))
const corpus = path.resolve(here, '../../fixtures/corpus_a')
const nm = process.env.PQ_NODE_MODULES || '/tmp/pq/node_modules'
const require = createRequire(path.join(nm, 'noop.js'))
const arrow = require('apache-arrow')
const pw = require('parquet-wasm')
const parquetjs = require('@dsnp/parquetjs')
const imp = (m) => import(pathToFileURL(require.resolve(m)).href)
const { parquetReadObjects } = await imp('hyparquet')
const { compressors } = await imp('hyparquet-compressors')
const { parquetWriteBuffer } = await imp('hyparquet-writer')

// ---- the six rows -----------------------------------------------------------
const KEYS = ['A01_0001', 'A02_0008', 'A04_0008', 'A02_0006', 'A05_0010', 'A05_0001']
const DIM = 32
const truth = new Map(fs.readFileSync(path.join(corpus, 'truth.tsv'), 'utf8').trim().split('\n').slice(1)
  .map((l) => l.split('\t')).map((f) => [f[0], f]))
const text = new Map(fs.readFileSync(path.join(corpus, 'kaldi/text'), 'utf8').split('\n').filter(Boolean)
  .map((l) => { const i = l.indexOf(' '); return [l.slice(0, i), l.slice(i + 1)] }))

let seed = 12345
const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 }
const f32 = (x) => Math.fround(x)
const vec = () => Array.from({ length: DIM }, () => f32(rand() * 2 - 1))

const rows = KEYS.map((key) => {
  const t = truth.get(key)
  return {
    utt: key, wav: t[8], audio: fs.readFileSync(path.join(corpus, t[8])), text: text.get(key), spk: t[1],
    utt_embedding: vec(), spk_embedding: vec(),
    speech_token: Array.from({ length: Number(t[7]) }, () => Math.floor(rand() * 6561)),
    rate: t[2], channels: t[3], samples: t[4],
  }
})
rows[1].text = null; rows[1].utt_embedding = null; rows[1].speech_token = []
rows[2].spk_embedding[3] = null; rows[2].spk_embedding[5] = NaN
rows[3].speech_token = null; rows[3].utt_embedding = []
rows[4].spk = null
rows[5].text = ''

// ---- writers ------------------------------------------------------------------
const listOf = (t) => new arrow.List(new arrow.Field('element', t, true))
function arrowTable(rs, cols) {
  const all = {
    utt: () => arrow.vectorFromArray(rs.map((r) => r.utt), new arrow.Utf8()),
    audio_data: () => arrow.vectorFromArray(rs.map((r) => r.audio && new Uint8Array(r.audio)), new arrow.Binary()),
    wav: () => arrow.vectorFromArray(rs.map((r) => r.wav), new arrow.Utf8()),
    text: () => arrow.vectorFromArray(rs.map((r) => r.text), new arrow.Utf8()),
    spk: () => arrow.vectorFromArray(rs.map((r) => r.spk), new arrow.Utf8()),
    utt_embedding: () => arrow.vectorFromArray(rs.map((r) => r.utt_embedding), listOf(new arrow.Float64())),
    spk_embedding: () => arrow.vectorFromArray(rs.map((r) => r.spk_embedding), listOf(new arrow.Float64())),
    speech_token: () => arrow.vectorFromArray(rs.map((r) => r.speech_token && r.speech_token.map(BigInt)), listOf(new arrow.Int64())),
  }
  const vecs = cols.map((c) => all[c]())
  const fields = cols.map((c, i) => new arrow.Field(c, vecs[i].type, true))
  const schema = new arrow.Schema(fields)
  const data = arrow.makeData({ type: new arrow.Struct(fields), length: rs.length, nullCount: 0,
    children: vecs.map((v) => v.data[0]) })
  return new arrow.Table(schema, new arrow.RecordBatch(schema, data))
}
const COLS = ['utt', 'audio_data', 'wav', 'text', 'spk', 'utt_embedding', 'spk_embedding', 'speech_token']

function writeArrow(rs, cols, configure) {
  let b = new pw.WriterPropertiesBuilder().setCreatedBy('parquet-rs (parquet-wasm 0.8.0) equishard test')
  b = configure(b)
  return pw.writeParquet(pw.Table.fromIPCStream(arrow.tableToIPC(arrowTable(rs, cols), 'stream')), b.build())
}

const E = pw.Encoding
const deltaEncodings = (b) => b.setDictionaryEnabled(false)
  .setColumnEncoding('utt', E.DELTA_BYTE_ARRAY).setColumnEncoding('text', E.DELTA_BYTE_ARRAY)
  .setColumnEncoding('spk', E.DELTA_BYTE_ARRAY).setColumnEncoding('wav', E.DELTA_BYTE_ARRAY)
  .setColumnEncoding('audio_data', E.DELTA_LENGTH_BYTE_ARRAY)
  .setColumnEncoding('speech_token.list.element', E.DELTA_BINARY_PACKED)
  .setColumnEncoding('utt_embedding.list.element', E.BYTE_STREAM_SPLIT)
  .setColumnEncoding('spk_embedding.list.element', E.BYTE_STREAM_SPLIT)

// name → [bytes, how it was written]
const VARIANTS = {
  'arrow_uncompressed_plain.parquet': (rs) => writeArrow(rs, COLS, (b) =>
    b.setCompression(pw.Compression.UNCOMPRESSED).setDictionaryEnabled(false)),
  'arrow_gzip_dict.parquet': (rs) => writeArrow(rs, COLS, (b) => b.setCompression(pw.Compression.GZIP)),
  'arrow_zstd_v2_dict.parquet': (rs) => writeArrow(rs, COLS, (b) =>
    b.setCompression(pw.Compression.ZSTD).setWriterVersion(pw.WriterVersion.V2)),
  'arrow_snappy_v2_nodict.parquet': (rs) => writeArrow(rs, COLS, (b) =>
    b.setCompression(pw.Compression.SNAPPY).setWriterVersion(pw.WriterVersion.V2).setDictionaryEnabled(false)),
  'arrow_zstd_v1_delta.parquet': (rs) => writeArrow(rs, COLS, (b) =>
    deltaEncodings(b.setCompression(pw.Compression.ZSTD))),
  'arrow_snappy_v2_delta.parquet': (rs) => writeArrow(rs, COLS, (b) =>
    deltaEncodings(b.setCompression(pw.Compression.SNAPPY).setWriterVersion(pw.WriterVersion.V2))),
  // three row groups of two rows; pages of ~1 KiB written a row at a time, so
  // audio_data takes a page per value and the dictionary falls back to PLAIN
  'arrow_snappy_rowgroups_pages.parquet': (rs) => writeArrow(rs, COLS, (b) =>
    b.setCompression(pw.Compression.SNAPPY).setMaxRowGroupSize(2).setDataPageSizeLimit(1024)
      .setWriteBatchSize(1).setDictionaryPageSizeLimit(40000)),
  'hyparquet_v2.parquet': (rs) => writeHyparquet(rs),
  'parquetjs_legacy_lists.parquet': (rs) => writeParquetjs(rs),
}

// hyparquet-writer: data page v2 only, its own encoders, 3-level lists.
function writeHyparquet(rs) {
  const list = (name, type) => [
    { name, repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    { name: 'element', type, repetition_type: 'OPTIONAL' },
  ]
  const schema = [
    { name: 'schema', num_children: 8 },
    { name: 'utt', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
    { name: 'audio_data', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' },
    { name: 'wav', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
    { name: 'text', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
    { name: 'spk', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
    ...list('utt_embedding', 'DOUBLE'),
    ...list('spk_embedding', 'DOUBLE'),
    ...list('speech_token', 'INT64'),
  ]
  const buf = parquetWriteBuffer({
    schema,
    columnData: [
      { name: 'utt', data: rs.map((r) => r.utt) },
      { name: 'audio_data', data: rs.map((r) => new Uint8Array(r.audio)), encoding: 'DELTA_LENGTH_BYTE_ARRAY' },
      { name: 'wav', data: rs.map((r) => r.wav) },
      { name: 'text', data: rs.map((r) => r.text), encoding: 'DELTA_BYTE_ARRAY' },
      { name: 'spk', data: rs.map((r) => r.spk) },
      { name: 'utt_embedding', data: rs.map((r) => r.utt_embedding) },
      { name: 'spk_embedding', data: rs.map((r) => r.spk_embedding), encoding: 'BYTE_STREAM_SPLIT' },
      { name: 'speech_token', data: rs.map((r) => r.speech_token && r.speech_token.map(BigInt)),
        encoding: 'DELTA_BINARY_PACKED' },
    ],
    rowGroupSize: 4,
    createdBy: 'hyparquet-writer 0.17.0 equishard test',
  })
  return new Uint8Array(buf)
}

// @dsnp/parquetjs: data page v1, gzip, and the legacy list forms older writers
// used: 2-level lists (an optional group holding `repeated double array`) and
// a bare repeated top-level field (`repeated int64 speech_token`). A 2-level
// list has no null elements (NaN stays NaN); a bare repeated field has no null
// list (null is empty).
async function writeParquetjs(rs) {
  const opt = (type) => ({ type, optional: true, compression: 'GZIP' })
  const twoLevel = (child) => ({ type: 'LIST', optional: true, fields: { [child]: { type: 'DOUBLE', repeated: true, compression: 'GZIP' } } })
  const schema = new parquetjs.ParquetSchema({
    utt: opt('UTF8'), audio_data: { ...opt('BYTE_ARRAY'), statistics: false }, wav: opt('UTF8'), text: opt('UTF8'), spk: opt('UTF8'),
    utt_embedding: twoLevel('array'), spk_embedding: twoLevel('item'),
    speech_token: { type: 'INT64', repeated: true, compression: 'GZIP' },
  })
  const file = path.join(here, '.parquetjs.tmp')
  const w = await parquetjs.ParquetWriter.openFile(schema, file, { rowGroupSize: 3 })
  const noNull = (v) => v.map((x) => (x === null ? NaN : x))
  for (const r of rs) {
    const row = { utt: r.utt, audio_data: r.audio, wav: r.wav, speech_token: (r.speech_token || []).map(BigInt) }
    if (r.text !== null) row.text = r.text
    if (r.spk !== null) row.spk = r.spk
    if (r.utt_embedding !== null) row.utt_embedding = { array: noNull(r.utt_embedding) }
    if (r.spk_embedding !== null) row.spk_embedding = { item: noNull(r.spk_embedding) }
    await w.appendRow(row)
  }
  await w.close()
  const buf = fs.readFileSync(file)
  fs.unlinkSync(file)
  return new Uint8Array(buf)
}

// ---- what each file should read as ------------------------------------------------
function expected(name, r) {
  const legacy = name.startsWith('parquetjs')
  const emb = (v) => (legacy && v ? v.map((x) => (x === null ? NaN : x)) : v)
  return {
    utt: r.utt, spk: r.spk, text: r.text, wav: r.wav,
    speech_token: legacy && r.speech_token === null ? [] : r.speech_token,
    utt_embedding: emb(r.utt_embedding), spk_embedding: emb(r.spk_embedding),
  }
}

// hyparquet's reading must agree with the inputs: values, nulls, NaN, audio bytes.
function same(a, b) {
  if (a === null || a === undefined) return b === null || b === undefined
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]))
  if (typeof a === 'number' && Number.isNaN(a)) return typeof b === 'number' && Number.isNaN(b)
  return a === b || Number(a) === Number(b)
}
async function check(name, buf) {
  const file = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength)
  const got = await parquetReadObjects({ file, compressors, utf8: false })
  if (got.length !== rows.length) throw new Error(`${name}: ${got.length} rows`)
  got.forEach((g, i) => {
    const want = expected(name, rows[i])
    for (const k of Object.keys(want)) {
      if (!(k in g) && want[k] === null) continue
      if (!same(want[k], g[k] === undefined ? null : g[k]))
        throw new Error(`${name}: row ${i} ${k}: ${JSON.stringify(g[k])?.slice(0, 80)}`)
    }
    if (Buffer.compare(Buffer.from(g.audio_data), rows[i].audio) !== 0)
      throw new Error(`${name}: row ${i}: audio_data differs`)
  })
}

const fmt = (v) => (Number.isNaN(v) || v === null ? 'nan' : Math.fround(v).toPrecision(9))
const lines = ['#file\tkey\tspk\twav\tsample_rate\tchannels\tsamples\ttext_len\tspeech_tokens\tutt_emb\tspk_emb']
const emb = ['#file\tkey\tcolumn\tvalues']
for (const [name, make] of Object.entries(VARIANTS)) {
  const buf = await make(rows)
  await check(name, buf)
  fs.writeFileSync(path.join(here, name), buf)
  rows.forEach((r) => {
    const e = expected(name, r)
    const n = (v) => (v === null || v === undefined ? -1 : v.length)
    lines.push([name, r.utt, e.spk ?? '\\N', r.wav, r.rate, r.channels, r.samples,
      e.text === null ? -1 : [...e.text].length, n(e.speech_token), n(e.utt_embedding), n(e.spk_embedding)].join('\t'))
    for (const c of ['utt_embedding', 'spk_embedding'])
      if (e[c] && e[c].length) emb.push([name, r.utt, c, e[c].map(fmt).join(',')].join('\t'))
  })
  console.log(`${name}: ${buf.length} bytes`)
}
fs.writeFileSync(path.join(here, 'truth.tsv'), lines.join('\n') + '\n')
fs.writeFileSync(path.join(here, 'embeddings.tsv'), emb.join('\n') + '\n')

// ---- small special files ----------------------------------------------------------
const special = {
  // audio_data null in row 1: that row is a bad utterance, the others are fine
  'null_audio.parquet': writeArrow([rows[1], { ...rows[0], audio: null }, rows[2]],
    ['utt', 'audio_data', 'text'], (b) => b.setCompression(pw.Compression.SNAPPY)),
  // only utt and audio_data: speech_tokens 0, no text, no embedding flags
  'minimal.parquet': writeArrow([rows[1]], ['utt', 'audio_data'], (b) => b),
  // no utt column: not a CosyVoice shard
  'no_utt.parquet': writeArrow([{ ...rows[1], audio: Buffer.from('RIFF') }], ['audio_data', 'text'], (b) => b),
  // parquetjs puts whole min/max values in page headers: a 1 KiB WAV makes a
  // page header of over 2 KiB (a reader must not assume headers are short)
  'big_page_header.parquet': await bigHeader(),
}

function tinyWav(samples) {
  const pcm = Buffer.alloc(2 * samples)
  for (let i = 0; i < samples; i++) pcm.writeInt16LE(Math.round(8000 * Math.sin(i / 5)), 2 * i)
  const wav = Buffer.alloc(44)
  wav.write('RIFF', 0); wav.writeUInt32LE(36 + pcm.length, 4); wav.write('WAVEfmt ', 8)
  wav.writeUInt32LE(16, 16); wav.writeUInt16LE(1, 20); wav.writeUInt16LE(1, 22)
  wav.writeUInt32LE(16000, 24); wav.writeUInt32LE(32000, 28); wav.writeUInt16LE(2, 32)
  wav.writeUInt16LE(16, 34); wav.write('data', 36); wav.writeUInt32LE(pcm.length, 40)
  return Buffer.concat([wav, pcm])
}

async function bigHeader() {
  const schema = new parquetjs.ParquetSchema({ utt: { type: 'UTF8' }, audio_data: { type: 'BYTE_ARRAY' } })
  const file = path.join(here, '.parquetjs.tmp')
  const w = await parquetjs.ParquetWriter.openFile(schema, file)
  await w.appendRow({ utt: 'tiny', audio_data: tinyWav(500) })
  await w.close()
  const buf = fs.readFileSync(file)
  fs.unlinkSync(file)
  return new Uint8Array(buf)
}
for (const [name, buf] of Object.entries(special)) {
  fs.writeFileSync(path.join(here, name), buf)
  console.log(`${name}: ${buf.length} bytes`)
}

// ---- fuzz seeds (tests/fuzz/corpus/parquet): every variant, tiny ---------------------
// The same rows with 16-sample WAVs, 4-element embeddings and at most 5 tokens,
// so libFuzzer starts from every writer, codec, page version and encoding.
const seeds = path.resolve(here, '../../fuzz/corpus/parquet')
fs.mkdirSync(seeds, { recursive: true })
const tiny = rows.map((r, i) => ({
  ...r, audio: tinyWav(16 + i), speech_token: r.speech_token && r.speech_token.slice(0, i),
  utt_embedding: r.utt_embedding && r.utt_embedding.slice(0, 4), spk_embedding: r.spk_embedding && r.spk_embedding.slice(0, 6),
}))
for (const [name, make] of Object.entries(VARIANTS)) {
  const buf = await make(tiny)
  fs.writeFileSync(path.join(seeds, name.replace('.parquet', '.seed')), buf)
}
fs.copyFileSync(path.join(here, 'no_utt.parquet'), path.join(seeds, 'no_utt.seed'))
console.log(`fuzz seeds: ${fs.readdirSync(seeds).length} files in ${seeds}`)
