// Independent check of `equishard plan --mode reshard` on parquet input, with
// hyparquet (a third-party JavaScript reader; equishard's own reader is not
// independent):
//
//   PQ_NODE_MODULES=…/node_modules node tests/reshard_parquet_check.mjs \
//       [--root DIR] [--codec SNAPPY] SOURCE_LIST OUTDIR
//
// Reads every source file SOURCE_LIST names (resolved against --root, else the
// current directory) and every file OUTDIR/data.list names, and checks:
//   - the rows of the new files are exactly the source rows, less the keys in
//     OUTDIR/filtered.tsv: every column of every row equal value for value
//     (bytes, strings, numbers bit for bit incl. NaN, nulls, null list elements);
//   - within each new file, rows keep source order (list order, then row);
//   - each new file has the source's schema (names, types, repetition,
//     children, annotations), one row group, and pages of --codec;
//   - utt2parquet_N.json maps exactly the file's utts, in file order, to its
//     data.list line, spk2parquet_N.json its speakers in first-appearance order,
//     and utt2data.list / spk2data.list list those files.
// Prints one summary line; exits 1 with a message on the first failure.
import fs from 'fs'
import path from 'path'
import { createRequire } from 'module'
import { pathToFileURL } from 'url'

const nm = process.env.PQ_NODE_MODULES
const require = createRequire(path.join(nm, 'noop.js'))
const imp = (m) => import(pathToFileURL(require.resolve(m)).href)
const { parquetReadObjects, parquetMetadata } = await imp('hyparquet')
const { compressors } = await imp('hyparquet-compressors')

const args = process.argv.slice(2)
let root = '.'
let codec = null
while (args[0] && args[0].startsWith('--')) {
  const opt = args.shift()
  if (opt === '--root') root = args.shift()
  else if (opt === '--codec') codec = args.shift()
  else fail(`unknown option ${opt}`)
}
const [sourceList, outdir] = args

function fail (msg) {
  console.error(`reshard_parquet_check: ${msg}`)
  process.exit(1)
}

const lines = (p) => fs.readFileSync(p, 'utf8').split('\n').filter(Boolean)
const load = (p) => {
  const b = fs.readFileSync(p)
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)
}

// A value as a string that is equal exactly when the values are: bytes as hex,
// numbers by their bits (NaN, -0), bigints, nulls, arrays element by element.
function canon (v) {
  if (v === null || v === undefined) return 'null'
  if (v instanceof Uint8Array) return 'b:' + Buffer.from(v).toString('hex')
  if (typeof v === 'string') return 's:' + JSON.stringify(v)
  if (typeof v === 'bigint') return 'i:' + v.toString()
  if (typeof v === 'number') {
    const b = Buffer.alloc(8)
    b.writeDoubleLE(v)
    return 'n:' + b.toString('hex')
  }
  if (typeof v === 'boolean') return String(v)
  if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']'
  if (typeof v === 'object') return '{' + Object.keys(v).sort().map((k) => k + ':' + canon(v[k])).join(',') + '}'
  return typeof v + ':' + String(v)
}

const bigints = (k, v) => (typeof v === 'bigint' ? v.toString() : v)
const schemaOf = (md) => JSON.stringify(md.schema.map((e) => ({
  name: e.name, type: e.type, type_length: e.type_length, repetition_type: e.repetition_type,
  num_children: e.num_children, converted_type: e.converted_type, logical_type: e.logical_type,
  scale: e.scale, precision: e.precision, field_id: e.field_id
})), bigints)
const utf8 = new TextDecoder('utf-8', { fatal: true })
const str = (v) => (typeof v === 'string' ? v : utf8.decode(v))

async function rowsOf (file) {
  const buf = load(file)
  const md = parquetMetadata(buf)
  const rows = await parquetReadObjects({ file: buf, compressors, utf8: false })
  return { md, rows }
}

// ---- the sources ------------------------------------------------------------
const filtered = new Set()
const ftsv = path.join(outdir, 'filtered.tsv')
if (fs.existsSync(ftsv)) lines(ftsv).slice(1).forEach((l) => filtered.add(l.split('\t')[0]))

let schema = null
const want = new Map() // utt → { canon, order }
let order = 0
for (const rel of lines(sourceList)) {
  const file = path.isAbsolute(rel) ? rel : path.join(root, rel)
  const { md, rows } = await rowsOf(file)
  if (schema === null) schema = schemaOf(md)
  for (const r of rows) {
    const utt = str(r.utt)
    if (filtered.has(utt)) continue
    if (want.has(utt)) fail(`${file}: utt ${utt} appears twice in the sources`)
    want.set(utt, { canon: canon(r), order: order++ })
  }
}

// ---- the new files ----------------------------------------------------------
const files = lines(path.join(outdir, 'data.list'))
const uttLists = lines(path.join(outdir, 'utt2data.list'))
const spkLists = lines(path.join(outdir, 'spk2data.list'))
if (uttLists.length !== files.length || spkLists.length !== files.length) {
  fail('utt2data.list / spk2data.list do not list one file per data.list line')
}
let seen = 0
for (let i = 0; i < files.length; i++) {
  const { md, rows } = await rowsOf(files[i])
  if (schemaOf(md) !== schema) fail(`${files[i]}: schema differs from the sources'`)
  if (md.row_groups.length !== 1) fail(`${files[i]}: ${md.row_groups.length} row groups, expected 1`)
  for (const col of md.row_groups[0].columns) {
    if (codec && col.meta_data.codec !== codec) fail(`${files[i]}: codec ${col.meta_data.codec}, expected ${codec}`)
  }
  const utts = []
  const spks = []
  let last = -1
  for (const r of rows) {
    const utt = str(r.utt)
    const w = want.get(utt)
    if (!w) fail(`${files[i]}: utt ${utt} is not a kept source row (or is there twice)`)
    if (w.canon !== canon(r)) fail(`${files[i]}: utt ${utt} differs from its source row`)
    if (w.order < last) fail(`${files[i]}: utt ${utt} out of source order`)
    last = w.order
    want.delete(utt)
    utts.push(utt)
    const spk = r.spk === null || r.spk === undefined ? null : str(r.spk)
    if (spk !== null && spk !== '' && !spks.includes(spk)) spks.push(spk)
    seen++
  }
  const expect = (list, keys, what) => {
    const name = list[i]
    const text = fs.readFileSync(name, 'utf8')
    const obj = JSON.parse(text)
    if (JSON.stringify(Object.keys(obj)) !== JSON.stringify(keys)) fail(`${name}: keys are not the file's ${what}`)
    if (!Object.values(obj).every((v) => v === files[i])) fail(`${name}: values are not ${files[i]}`)
    // byte for byte what Python's json.dump(obj, f, ensure_ascii=False, indent=2) writes
    const py = keys.length ? '{\n' + keys.map((k) => `  ${JSON.stringify(k)}: ${JSON.stringify(files[i])}`).join(',\n') + '\n}' : '{}'
    if (text !== py) fail(`${name}: not formatted as make_parquet_list.py's json.dump`)
  }
  expect(uttLists, utts, 'utts')
  expect(spkLists, spks, 'speakers')
}
if (want.size) fail(`${want.size} kept source rows are in no new file (e.g. ${[...want.keys()][0]})`)
console.log(`reshard_parquet_check: ${seen} rows in ${files.length} files equal their sources`)
