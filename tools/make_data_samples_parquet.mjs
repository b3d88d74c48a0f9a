// Adds data-samples/parquet/: the sample corpus as CosyVoice's
// tools/make_parquet_list.py lays it out (--num_utts_per_parquet 16), written by
// a third-party parquet writer (arrow-rs through parquet-wasm, with pyarrow's
// defaults: SNAPPY, data page v1, dictionary), never by equishard:
//
//   mkdir -p /tmp/pq && cd /tmp/pq && npm install parquet-wasm@0.8.0 apache-arrow@21.2.0
//   PQ_NODE_MODULES=/tmp/pq/node_modules node tools/make_data_samples_parquet.mjs
//
// Columns utt, wav, audio_data, text, spk in make_parquet_list.py's order (the
// sample has no embeddings or speech tokens, so those columns are left out).
// Rows in wav.scp order, 16 a file: 16 + 8 rows, deliberately uneven. Beside
// the files: data.list, utt2data.list, spk2data.list and the per-file
// utt2parquet_N.json / spk2parquet_N.json, formatted as json.dump(indent=2,
// ensure_ascii=False) writes them. Paths are relative to data-samples/.
// Deterministic: same inputs, same bytes.
import fs from 'fs'
import path from 'path'
import { createRequire } from 'module'
import { fileURLToPath } from 'url'

const here = path.dirname(fileURLToPath(import.meta.url))
const samples = path.resolve(here, '../data-samples')
const nm = process.env.PQ_NODE_MODULES || '/tmp/pq/node_modules'
const require = createRequire(path.join(nm, 'noop.js'))
const arrow = require('apache-arrow')
const pw = require('parquet-wasm')

const PER_FILE = 16
const kv = (name) => new Map(fs.readFileSync(path.join(samples, 'kaldi', name), 'utf8').split('\n')
  .filter(Boolean).map((l) => { const i = l.indexOf(' '); return [l.slice(0, i), l.slice(i + 1)] }))
const wav = kv('wav.scp')
const text = kv('text')
const spk = kv('utt2spk')
const utts = [...wav.keys()]

function writeFile (rows) {
  const vec = (f, type) => arrow.vectorFromArray(rows.map(f), type)
  const cols = {
    utt: vec((u) => u, new arrow.Utf8()),
    wav: vec((u) => wav.get(u), new arrow.Utf8()),
    audio_data: vec((u) => new Uint8Array(fs.readFileSync(path.join(samples, wav.get(u)))), new arrow.Binary()),
    text: vec((u) => text.get(u), new arrow.Utf8()),
    spk: vec((u) => spk.get(u), new arrow.Utf8()),
  }
  const fields = Object.entries(cols).map(([n, v]) => new arrow.Field(n, v.type, true))
  const schema = new arrow.Schema(fields)
  const data = arrow.makeData({ type: new arrow.Struct(fields), length: rows.length, nullCount: 0,
    children: Object.values(cols).map((v) => v.data[0]) })
  const table = new arrow.Table(schema, new arrow.RecordBatch(schema, data))
  const props = new pw.WriterPropertiesBuilder().setCreatedBy('parquet-rs (parquet-wasm 0.8.0) equishard data-samples')
    .setCompression(pw.Compression.SNAPPY).build()
  return pw.writeParquet(pw.Table.fromIPCStream(arrow.tableToIPC(table, 'stream')), props)
}

const pyJson = (keys, value) => (keys.length
  ? '{\n' + keys.map((k) => `  ${JSON.stringify(k)}: ${JSON.stringify(value)}`).join(',\n') + '\n}'
  : '{}')

const dir = path.join(samples, 'parquet')
fs.mkdirSync(dir, { recursive: true })
const lists = { data: [], utt: [], spk: [] }
for (let i = 0, j = 0; j < utts.length; i++, j += PER_FILE) {
  const rows = utts.slice(j, j + PER_FILE)
  const n = String(i).padStart(9, '0')
  const file = `parquet/parquet_${n}.tar`
  fs.writeFileSync(path.join(samples, file), writeFile(rows))
  const spks = [...new Set(rows.map((u) => spk.get(u)))]
  fs.writeFileSync(path.join(dir, `utt2parquet_${n}.json`), pyJson(rows, file))
  fs.writeFileSync(path.join(dir, `spk2parquet_${n}.json`), pyJson(spks, file))
  lists.data.push(file)
  lists.utt.push(`parquet/utt2parquet_${n}.json`)
  lists.spk.push(`parquet/spk2parquet_${n}.json`)
}
fs.writeFileSync(path.join(dir, 'data.list'), lists.data.join('\n') + '\n')
fs.writeFileSync(path.join(dir, 'utt2data.list'), lists.utt.join('\n') + '\n')
fs.writeFileSync(path.join(dir, 'spk2data.list'), lists.spk.join('\n') + '\n')
console.log(`${utts.length} utterances in ${lists.data.length} parquet files under ${dir}`)
