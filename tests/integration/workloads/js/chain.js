// A busy chain for tests/integration/test_v8_names.py: main (async) -> Worker.crunch -> an
// anonymous function -> recurse x6 -> leaf. It prints one JSON line with V8's own view of the
// chain (Error().stack taken in leaf: the callers' lines are the call sites a sampled stack
// shows), the lines of leaf's loop and V8's version, then spins until killed, or for
// CHAIN_SECONDS seconds (so that `node --cpu-prof` writes its profile). With CHAIN_WORKER=1
// the chain runs in a worker_threads worker and the main thread sleeps. With
// CHAIN_OPTIMISE_AFTER=S (node run with --allow-natives-syntax --no-opt) leaf stays interpreted
// for S seconds, then is optimised by TurboFan and {"optimised": true} is printed.
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

// Started with --no-opt: V8's flags turn TurboFan on at run time (node's v8.setFlagsFromString),
// and the natives syntax, which only parses under --allow-natives-syntax, optimises leaf on its
// next call; compiled only when asked for.
function optimiseLeafLater() {
  const after = Number(process.env.CHAIN_OPTIMISE_AFTER);
  if (!after) return () => {};
  const start = Date.now();
  let done = false;
  return () => {
    if (done || Date.now() - start < 1000 * after) return;
    done = true;
    require('v8').setFlagsFromString('--opt');
    new Function('leaf', '%PrepareFunctionForOptimization(leaf); %OptimizeFunctionOnNextCall(leaf);')(leaf);
    process.stdout.write(JSON.stringify({ optimised: true }) + '\n');
  };
}

async function main() {
  const w = new Worker();
  const tier = optimiseLeafLater();
  const until = process.env.CHAIN_SECONDS ? Date.now() + 1000 * Number(process.env.CHAIN_SECONDS) : Infinity;
  while (Date.now() < until) {
    w.crunch(2000000);
    tier();
    await null;
  }
}

if (isMainThread && process.env.CHAIN_WORKER === '1') {
  new Thread(__filename);
  setInterval(() => {}, 1000);
} else {
  main();
}
