// Writes pages.parquet with hyparquet-writer (a third-party writer): 120 rows in
// three row groups of 40, 2 KiB data pages (v2, SNAPPY), so every flat column
// has many pages and audio_data a few values per page: the file the row
// reader's page skipping is tested on (tests/test_rows.c). Also every value
// type the row reader returns: strings (some null, some not ASCII), bytes,
// INT32, INT64 past 2^53, FLOAT, DOUBLE, BOOLEAN, lists of INT32 / INT64 /
// DOUBLE / strings with null and empty lists and null elements.
//
//   mkdir -p /tmp/pqw && (cd /tmp/pqw && npm install hyparquet-writer@0.17.0)
//   PQ_NODE_MODULES=/tmp/pqw/node_modules node tests/data/parquet/make_pages.mjs
//   node tests/data/parquet/dump_rows.mjs      # then refresh rows.json
//
// Deterministic: the same bytes on every run.
import fs from 'fs'
import path from 'path'
import { createRequire } from 'module'
import { fileURLToPath, pathToFileURL } from 'url'

const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(path.join(process.env.PQ_NODE_MODULES, 'noop.js'))
const { parquetWriteBuffer } = await import(pathToFileURL(require.resolve('hyparquet-writer')).href)

let seed = 12345
const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
const N = 120
const rows = []
for (let i = 0; i < N; i++) {
  const audio = new Uint8Array(300 + rand(2700))
  for (let k = 0; k < audio.length; k++) audio[k] = rand(256)
  rows.push({
    utt: `P${String(i).padStart(4, '0')}`,
    audio,
    text: i % 7 === 3 ? null : i % 5 === 0 ? `第${i}句话，测试。` : `sentence number ${i}`,
    spk: i % 11 === 4 ? null : `S${i % 6}`,
    n: i % 9 === 2 ? null : rand(200000) - 100000,
    big: i % 8 === 5 ? null : BigInt(rand(1000)) * 9007199254740993n - 4000000000000000000n,
    score: i % 10 === 6 ? null : Math.fround((rand(100000) - 50000) / 1024),
    dur: i % 13 === 1 ? null : rand(1000000) / 997,
    ok: i % 6 === 0 ? null : rand(2) === 1,
    tok32: i % 12 === 7 ? null : Array.from({ length: rand(40) }, (_, k) => (k % 9 === 4 ? null : rand(6561))),
    speech_token: i % 10 === 9 ? null : Array.from({ length: rand(60) }, () => BigInt(rand(6561))),
    utt_embedding: i % 15 === 2 ? null : i % 15 === 3 ? []
      : Array.from({ length: 16 }, (_, k) => (k === 5 && i % 4 === 1 ? null : (rand(20000) - 10000) / 8192)),
    words: i % 9 === 8 ? null : Array.from({ length: rand(5) }, (_, k) => (k === 1 && i % 3 === 0 ? null : `w${rand(100)}`)),
  })
}

const list = (name, type, extra = {}) => [
  { name, repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', type, repetition_type: 'OPTIONAL', ...extra },
]
const schema = [
  { name: 'schema', num_children: 13 },
  { name: 'utt', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
  { name: 'audio_data', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' },
  { name: 'text', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
  { name: 'spk', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
  { name: 'n', type: 'INT32', repetition_type: 'OPTIONAL' },
  { name: 'big', type: 'INT64', repetition_type: 'OPTIONAL' },
  { name: 'score', type: 'FLOAT', repetition_type: 'OPTIONAL' },
  { name: 'dur', type: 'DOUBLE', repetition_type: 'OPTIONAL' },
  { name: 'ok', type: 'BOOLEAN', repetition_type: 'OPTIONAL' },
  ...list('tok32', 'INT32'),
  ...list('speech_token', 'INT64'),
  ...list('utt_embedding', 'DOUBLE'),
  ...list('words', 'BYTE_ARRAY', { converted_type: 'UTF8' }),
]
const col = (name) => ({ name, data: rows.map((r) => r[name]) })
const buf = parquetWriteBuffer({
  schema,
  columnData: [col('utt'), { name: 'audio_data', data: rows.map((r) => r.audio) }, col('text'), col('spk'),
    col('n'), col('big'), col('score'), col('dur'), col('ok'), col('tok32'), col('speech_token'),
    col('utt_embedding'), col('words')],
  rowGroupSize: 40,
  pageSize: 2048,
  createdBy: 'hyparquet-writer 0.17.0 equishard test',
})
fs.writeFileSync(path.join(here, 'pages.parquet'), new Uint8Array(buf))
console.log(`pages.parquet: ${buf.byteLength} bytes`)
