// Reads parquet files with hyparquet (an independent reader) and writes every
// row, value for value, to rows.json: the truth the row reader is tested
// against (tests/test_rows.c, tests/python/test_rows.py).
//
//   PQ_NODE_MODULES=$PWD/build-npm/node_modules node tests/data/parquet/dump_rows.mjs
//
// rows.json: {"files": [{"path" (from the repository root), "num_rows",
// "row_groups": [rows per group], "columns": [{"name", "kind", "elem"}], "rows":
// [{column: value}]}]}. kind is string | bytes | int | float | bool | list |
// unsupported (a list of lists, a struct: no values written); elem is a list's
// element kind. Values: null; a string; a number (ints exact; float32 values as
// the double they are); "NaN" / "Infinity" / "-Infinity"; an int64 outside
// ±2^53 as a decimal string; bytes as {"len", "crc32" (zlib), "head": first 16
// bytes in hex}; a list as an array of those.
import fs from 'fs'
import path from 'path'
import zlib from 'zlib'
import { createRequire } from 'module'
import { fileURLToPath, pathToFileURL } from 'url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
const nm = process.env.PQ_NODE_MODULES || path.join(root, 'build-npm/node_modules')
const require = createRequire(path.join(nm, 'noop.js'))
const imp = (m) => import(pathToFileURL(require.resolve(m)).href)
const { parquetReadObjects, parquetMetadata } = await imp('hyparquet')
const { compressors } = await imp('hyparquet-compressors')

const FILES = fs.readdirSync(path.join(root, 'tests/data/parquet')).filter((f) => f.endsWith('.parquet'))
  .sort().map((f) => `tests/data/parquet/${f}`)
  .concat(['data-samples/parquet/parquet_000000000.tar', 'data-samples/parquet/parquet_000000001.tar',
    'tests/fixtures/corpus_a/parquet/parquet_000000000.tar', 'tests/fixtures/corpus_a/parquet/parquet_000000003.tar',
    'tests/fixtures/real/FunAudioLLM__InspireMusic/examples/music_generation/data/samples/parquet/parquet_000000000.tar'])

function leafKind(e) {
  if (e.type === 'BYTE_ARRAY') return e.converted_type === 'UTF8' || e.logical_type?.type === 'STRING' ? 'string' : 'bytes'
  if (e.type === 'INT32' || e.type === 'INT64') return 'int'
  if (e.type === 'FLOAT' || e.type === 'DOUBLE') return 'float'
  if (e.type === 'BOOLEAN') return 'bool'
  return 'bytes'
}

// Top-level fields: a flat leaf, a one-level list (LIST group or bare
// repeated leaf), or something else.
function columns(schema) {
  const out = []
  let i = 1
  const subtree = (j) => { // elements of the subtree at j
    let n = 1
    for (let c = 0; c < (schema[j].num_children || 0); c++) n += subtree(j + n)
    return n
  }
  while (i < schema.length) {
    const e = schema[i]
    const size = subtree(i)
    const nodes = schema.slice(i, i + size)
    const leaves = nodes.filter((s) => !s.num_children)
    const repeated = nodes.filter((s) => s.repetition_type === 'REPEATED').length
    if (size === 1 && e.repetition_type !== 'REPEATED') out.push({ name: e.name, kind: leafKind(e) })
    else if (leaves.length === 1 && repeated === 1 && size <= 3) out.push({ name: e.name, kind: 'list', elem: leafKind(leaves[0]) })
    else out.push({ name: e.name, kind: 'unsupported' })
    i += size
  }
  return out
}

function value(v) {
  if (v === null || v === undefined) return null
  if (typeof v === 'bigint') return v >= -(2n ** 53n) && v <= 2n ** 53n ? Number(v) : v.toString()
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v)
  if (typeof v === 'string' || typeof v === 'boolean') return v
  if (v instanceof Uint8Array) {
    return { len: v.length, crc32: zlib.crc32(v), head: Buffer.from(v.subarray(0, 16)).toString('hex') }
  }
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return Array.from(v, value)
  throw new Error(`unexpected value ${v}`)
}

const files = []
for (const rel of FILES) {
  const b = fs.readFileSync(path.join(root, rel))
  const file = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)
  const md = parquetMetadata(file)
  const cols = columns(md.schema)
  const objs = await parquetReadObjects({ file, compressors, utf8: false })
  const rows = objs.map((o) => Object.fromEntries(cols.filter((c) => c.kind !== 'unsupported')
    .map((c) => [c.name, value(o[c.name])])))
  files.push({ path: rel, num_rows: Number(md.num_rows), row_groups: md.row_groups.map((g) => Number(g.num_rows)),
    columns: cols, rows })
}
const text = '{"files": [\n' + files.map((f) => JSON.stringify(f)).join(',\n') + '\n]}\n'
fs.writeFileSync(path.join(root, 'tests/data/parquet/rows.json'), text)
console.log(`${files.length} files, ${files.reduce((n, f) => n + f.rows.length, 0)} rows`)
