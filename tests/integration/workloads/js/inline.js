// Optimised code with an inlined call for tests/integration/test_v8_names.py: hot's loop calls
// sq, which TurboFan inlines once hot is optimised, so a pc in sq's part of hot's code names two
// frames, sq then hot. Prints {"pid", "sq": line of sq's body, "call": line of the call} once,
// then spins until killed.
'use strict';

function sq(x) {
  return (x * x) % 1009; // SQ_BODY
}

function hot(n) {
  let s = 0;
  for (let i = 0; i < n; i++) {
    s = (s + sq(i)) % 1000003; // SQ_CALL
  }
  return s;
}

const src = require('fs').readFileSync(__filename, 'utf8').split('\n');
const line = (m) => src.findIndex((l) => l.endsWith(m)) + 1;
process.stdout.write(JSON.stringify({ pid: process.pid, sq: line('// SQ_BODY'), call: line('// SQ_CALL') }) + '\n');
for (;;) hot(5000000);
