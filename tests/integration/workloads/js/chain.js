// A busy chain for tests/integration/test_v8_names.py: main -> Worker.crunch -> recurse x5 ->
// leaf, plus an anonymous function and an async function on the way. It prints one JSON line
// with V8's own view of the chain (Error().stack taken in leaf: caller lines are the call
// sites a sampled stack shows) and the line range of leaf's loop, then spins until killed.
'use strict';

let reported = false;

function report() {
  const e = {};
  Error.stackTraceLimit = 50;
  Error.captureStackTrace(e, report);
  const frames = e.stack.split('\n').slice(1).map((s) => s.trim().replace(/^at /, ''));
  const src = require('fs').readFileSync(__filename, 'utf8').split('\n');
  const loop = ['// LOOP_FIRST', '// LOOP_LAST'].map((m) => src.findIndex((l) => l.endsWith(m)) + 1);
  process.stdout.write(JSON.stringify({ pid: process.pid, stack: frames, loop }) + '\n');
}

function leaf(n) {
  if (!reported) { reported = true; report(); }
  let s = 0;
  for (let i = 0; i < n; i++) { // LOOP_FIRST
    s = (s + i * 7) % 1000003;
  } // LOOP_LAST
  return s;
}

function recurse(n, depth) {
  if (depth === 0) return leaf(n);
  return recurse(n, depth - 1) + 1;
}

class Worker {
  crunch(n) {
    const step = function (k) { return recurse(k, 5); };
    return step(n);
  }
}

async function main() {
  const w = new Worker();
  for (;;) {
    w.crunch(20000000);
    await null;
  }
}

main();
