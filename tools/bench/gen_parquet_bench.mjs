// Writes CosyVoice-style parquet shards for tools/bench/bench_parquet.sh, as
// tools/make_parquet_list.py would (1000 rows a file, pandas/pyarrow defaults:
// dictionary on with PLAIN fallback past 1 MiB, data page v1, 1 MiB pages, one
// row group), with arrow-rs (parquet-wasm 0.8.0) as the writer:
//
//   PQ_NODE_MODULES=/tmp/pq/node_modules node gen_parquet_bench.mjs ROWS OUTDIR [snappy|zstd] [SEED]
//
// Audio: 16 kHz mono PCM16 WAV, log-normal durations (median 5 s, sigma 0.5,
// clipped 1-20 s), noise plus a tone (compresses about as little as speech).
// Also 192-d utt/spk embeddings (double) and 25 Hz speech tokens, as CosyVoice's
// tools/extract_*.py produce them. Writes OUTDIR/parquet_%09d.tar and data.list.
import fs from 'fs'
import path from 'path'
import { createRequire } from 'module'

const [rowsArg, outdir, codecArg = 'snappy', seedArg = '1234'] = process.argv.slice(2)
if (!rowsArg || !outdir) {
  console.error('usage: gen_parquet_bench.mjs ROWS OUTDIR [snappy|zstd] [SEED]')
  process.exit(2)
}
const require = createRequire(path.join(process.env.PQ_NODE_MODULES || '/tmp/pq/node_modules', 'noop.js'))
const arrow = require('apache-arrow')
const pw = require('parquet-wasm')

let seed = Number(seedArg)
const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 }
const gauss = () => Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand())

function wav(samples) {
  const b = Buffer.alloc(44 + 2 * samples)
  b.write('RIFF', 0); b.writeUInt32LE(36 + 2 * samples, 4); b.write('WAVEfmt ', 8)
  b.writeUInt32LE(16, 16); b.writeUInt16LE(1, 20); b.writeUInt16LE(1, 22)
  b.writeUInt32LE(16000, 24); b.writeUInt32LE(32000, 28); b.writeUInt16LE(2, 32)
  b.writeUInt16LE(16, 34); b.write('data', 36); b.writeUInt32LE(2 * samples, 40)
  const f = 100 + 300 * rand()
  for (let i = 0; i < samples; i++) {
    const v = 3000 * Math.sin((2 * Math.PI * f * i) / 16000) + 1500 * gauss()
    b.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(v))), 44 + 2 * i)
  }
  return b
}

const list = (t) => new arrow.List(new arrow.Field('element', t, true))
fs.mkdirSync(outdir, { recursive: true })
const total = Number(rowsArg)
const files = []
for (let first = 0, shard = 0; first < total; first += 1000, shard++) {
  const n = Math.min(1000, total - first)
  const cols = { utt: [], audio_data: [], wav: [], text: [], spk: [], utt_embedding: [], spk_embedding: [], speech_token: [] }
  for (let i = 0; i < n; i++) {
    const k = first + i
    const secs = Math.min(20, Math.max(1, 5 * Math.exp(0.5 * gauss())))
    const samples = Math.round(secs * 16000)
    const spk = `S${String(Math.floor(k / 50)).padStart(4, '0')}`
    cols.utt.push(`${spk}_${String(k).padStart(6, '0')}`)
    cols.audio_data.push(new Uint8Array(wav(samples)))
    cols.wav.push(`/data/wavs/${spk}/${k}.wav`)
    cols.text.push('the quick brown fox jumps over the lazy dog '.repeat(1 + Math.floor(secs / 3)).trim())
    cols.spk.push(spk)
    cols.utt_embedding.push(Array.from({ length: 192 }, () => Math.fround(gauss())))
    cols.spk_embedding.push(Array.from({ length: 192 }, () => Math.fround(gauss())))
    cols.speech_token.push(Array.from({ length: Math.round(secs * 25) }, () => BigInt(Math.floor(rand() * 6561))))
  }
  const types = {
    utt: new arrow.Utf8(), audio_data: new arrow.Binary(), wav: new arrow.Utf8(), text: new arrow.Utf8(),
    spk: new arrow.Utf8(), utt_embedding: list(new arrow.Float64()), spk_embedding: list(new arrow.Float64()),
    speech_token: list(new arrow.Int64()),
  }
  const vecs = Object.keys(cols).map((c) => arrow.vectorFromArray(cols[c], types[c]))
  const fields = Object.keys(cols).map((c, i) => new arrow.Field(c, vecs[i].type, true))
  const schema = new arrow.Schema(fields)
  const data = arrow.makeData({ type: new arrow.Struct(fields), length: n, nullCount: 0, children: vecs.map((v) => v.data[0]) })
  const table = new arrow.Table(schema, new arrow.RecordBatch(schema, data))
  const props = new pw.WriterPropertiesBuilder()
    .setCompression(codecArg === 'zstd' ? pw.Compression.ZSTD : pw.Compression.SNAPPY)
    .setDictionaryPageSizeLimit(1 << 20).setDataPageSizeLimit(1 << 20).build()
  const buf = pw.writeParquet(pw.Table.fromIPCStream(arrow.tableToIPC(table, 'stream')), props)
  const name = `parquet_${String(shard).padStart(9, '0')}.tar`
  fs.writeFileSync(path.join(outdir, name), buf)
  files.push(name)
}
fs.writeFileSync(path.join(outdir, 'data.list'), files.map((f) => path.join(outdir, f)).join('\n') + '\n')
