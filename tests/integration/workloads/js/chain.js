// A busy chain for tests/integration/test_v8_names.py: main (async) -> Worker.crunch -> an
// anonymous function -> recurse x6 -> leaf. It prints one JSON line with V8's own view of the
// chain (Error().stack taken in leaf: the callers' lines are the call sites a sampled stack
// shows), the lines of leaf's loop and V8's version, then spins until killed, or for
// CHAIN_SECONDS seconds (so that `node --cpu-prof` writes its profile). With CHAIN_WORKER=1
// the chain runs in a worker_threads worker and the main thread sleeps.
'use strict';

const { Worker: Thread, isMainThread } = require('worker_threads');

let reported = false;

function report() {
  const e = {};
  Error.stackTraceLimit = 50;
  Error.captureStackTrace(e, report);
  const frames = e.stack.split('\n').slice(1).map((s) => s.trim().replace(/^at /, ''));
  const src = require('fs').readFileSync(__filename, 'utf8').split('\n');
  const loop = ['// LOOP_FIRST', '// LOOP_LAST'].map((m) => src.findIndex((l) => l.endsWith(m)) + 1);
  process.stdout.write(JSON.stringify({ pid: process.pid, main: isMainThread, v8: process.versions.v8,
                                        stack: frames, loop }) + '\n');
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
  const until = process.env.CHAIN_SECONDS ? Date.now() + 1000 * Number(process.env.CHAIN_SECONDS) : Infinity;
  while (Date.now() < until) {
    w.crunch(2000000);
    await null;
  }
}

if (isMainThread && process.env.CHAIN_WORKER === '1') {
  new Thread(__filename);
  setInterval(() => {}, 1000);
} else {
  main();
}
