// Reads the fixtures' parquet files with hyparquet (an independent reader) and
// writes what tests/test_parquet.c compares equishard's reader against:
//
//   PQ_NODE_MODULES=/tmp/pq/node_modules node tests/data/parquet/dump.mjs
//
// fixtures.tsv, one line per row:
//   file  row  key  spk  text_len  speech_tokens  utt_emb_dim  spk_emb_dim
//   (InspireMusic has no speech_token or embeddings: its columns 6 and 7 hold the
//   top-level lengths of semantic_token and acoustic_token instead)
//   utt_emb[0,1,95,191]  spk_emb[0,1,95,191]  (float32, %.9g; '-' when absent)
//   utt_emb_sum  spk_emb_sum  (sum in order of the float32 values, as a double,
//   %.17g; nulls count as 0; '-' when absent)
// and one "#columns" line per file with its top-level column names.
// text_len counts code points ([...s].length); list lengths are top-level
// element counts (InspireMusic's tokens are lists of lists).
import fs from 'fs'
import path from 'path'
import { createRequire } from 'module'
import { fileURLToPath, pathToFileURL } from 'url'

const here = path.dirname(fileURLToPath(import.meta.url))
const fixtures = path.resolve(here, '../../fixtures')
const nm = process.env.PQ_NODE_MODULES || '/tmp/pq/node_modules'
const require = createRequire(path.join(nm, 'noop.js'))
const imp = (m) => import(pathToFileURL(require.resolve(m)).href)
const { parquetReadObjects, parquetMetadata } = await imp('hyparquet')
const { compressors } = await imp('hyparquet-compressors')

const FILES = [0, 1, 2, 3].map((i) => `corpus_a/parquet/parquet_00000000${i}.tar`)
  .concat(['real/FunAudioLLM__InspireMusic/examples/music_generation/data/samples/parquet/parquet_000000000.tar'])
const pick = (v) => (v && v.length ? [0, 1, 95, 191].map((i) => (i < v.length ? fmt(v[i]) : '-')).join(',') : '-')
const fmt = (x) => (x === null || Number.isNaN(x) ? 'nan' : Math.fround(x).toPrecision(9))
const sum = (v) => (v && v.length ? v.reduce((a, x) => a + (x === null ? 0 : Math.fround(x)), 0).toPrecision(17) : '-')
const len = (v) => (v === null || v === undefined ? -1 : v.length)

const out = []
for (const rel of FILES) {
  const b = fs.readFileSync(path.join(fixtures, rel))
  const file = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)
  const md = parquetMetadata(file)
  const top = []
  for (let i = 1, skip = 0; i < md.schema.length; i++) { // top-level names: walk num_children
    if (skip === 0) top.push(md.schema[i].name)
    else skip--
    skip += md.schema[i].num_children || 0
  }
  out.push(['#columns', rel, top.join(',')].join('\t'))
  const rows = await parquetReadObjects({ file, compressors, utf8: false })
  const dec = new TextDecoder()
  const str = (v) => (v === null || v === undefined ? null : typeof v === 'string' ? v : dec.decode(v))
  rows.forEach((r, i) => {
    const text = str(r.text)
    out.push([rel, i, str(r.utt), str(r.spk) ?? '\\N', text === null ? -1 : [...text].length,
      len(r.speech_token ?? r.semantic_token), len(r.utt_embedding ?? r.acoustic_token), len(r.spk_embedding),
      pick(r.utt_embedding), pick(r.spk_embedding), sum(r.utt_embedding), sum(r.spk_embedding)].join('\t'))
  })
}
fs.writeFileSync(path.join(here, 'fixtures.tsv'), out.join('\n') + '\n')
console.log(`${out.length} lines`)
