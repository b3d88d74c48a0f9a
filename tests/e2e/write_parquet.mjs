// Writes one CosyVoice parquet file (make_parquet_list.py's columns) with
// hyparquet-writer, a third-party writer: the end-to-end corpus is not written
// by equishard's own code. One row group (as pandas/pyarrow writes these files).
//
// usage: node write_parquet.mjs ROWS.json OUT  (NODE_PATH: build-npm/node_modules)
// ROWS.json: [{utt, wav (a WAV file's path: its bytes become audio_data), text, spk,
//              utt_embedding, spk_embedding, speech_token}]
import { readFileSync, writeFileSync, renameSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(process.env.NODE_PATH + '/')
const { parquetWriteBuffer } = await import(require.resolve('hyparquet-writer'))

const [rowsPath, out] = process.argv.slice(2)
const rows = JSON.parse(readFileSync(rowsPath, 'utf8'))
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
  ...list('utt_embedding', 'FLOAT'),
  ...list('spk_embedding', 'FLOAT'),
  ...list('speech_token', 'INT64'),
]
const buf = parquetWriteBuffer({
  schema,
  columnData: [
    { name: 'utt', data: rows.map((r) => r.utt) },
    { name: 'audio_data', data: rows.map((r) => new Uint8Array(readFileSync(r.wav))) },
    { name: 'wav', data: rows.map((r) => r.wav) },
    { name: 'text', data: rows.map((r) => r.text) },
    { name: 'spk', data: rows.map((r) => r.spk) },
    { name: 'utt_embedding', data: rows.map((r) => r.utt_embedding) },
    { name: 'spk_embedding', data: rows.map((r) => r.spk_embedding) },
    { name: 'speech_token', data: rows.map((r) => r.speech_token.map(BigInt)) },
  ],
  rowGroupSize: 1 << 20,
  createdBy: 'hyparquet-writer, equishard end-to-end corpus',
})
writeFileSync(out + '.part', new Uint8Array(buf))
renameSync(out + '.part', out)
