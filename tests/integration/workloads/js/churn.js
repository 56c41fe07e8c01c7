// Functions that live and die, for the stale check of tests/integration/test_v8_names.py: each
// generation compiles 300 functions named gen<G>_<I> (new Function: fresh SharedFunctionInfos),
// spends ~100 ms in gen<G>_0, then drops them all and collects garbage (run with --expose-gc
// --compact-on-every-full-gc so that the collector frees and moves them). Prints {"pid"} once, then
// {"gen": G} as each generation ends.
'use strict';

process.stdout.write(JSON.stringify({ pid: process.pid }) + '\n');
for (let gen = 0; ; gen++) {
  let fns = [];
  for (let i = 0; i < 300; i++) {
    fns.push(new Function('n', `return function gen${gen}_${i}(n) { let s = 0; for (let k = 0; k < n; k++) { s = (s + k * ${i + 3}) % 1000003; } return s; };`)());
  }
  const until = Date.now() + 100;
  while (Date.now() < until) fns[0](20000);
  for (const f of fns) f(10);
  fns = null;
  global.gc();
  process.stdout.write(JSON.stringify({ gen }) + '\n');
}
