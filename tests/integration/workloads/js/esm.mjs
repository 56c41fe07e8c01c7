// An ES module for tests/integration/test_v8_names.py: V8 names its script by URL (file:///...).
// Prints {"pid", "url", "loop": [first, last], "call"} once, then spins in spin's loop until
// killed. The module's top level, which calls spin, has no name: "(anonymous)", as V8's profiler
// says.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const src = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
const line = (m) => src.findIndex((l) => l.endsWith(m)) + 1;
process.stdout.write(JSON.stringify({ pid: process.pid, url: import.meta.url, loop: [line('// LOOP_FIRST'), line('// LOOP_LAST')],
                                      call: line('// CALL') }) + '\n');

export function spin(n) {
  let s = 0;
  for (let i = 0; i < n; i++) { // LOOP_FIRST
    s = (s + i * 3) % 1000003;
  } // LOOP_LAST
  return s;
}

for (;;) spin(1000000); // CALL
