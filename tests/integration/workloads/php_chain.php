<?php
/* A CPU-bound PHP program with a known call chain, for the PHP stack tests and benchmark
 * (PHP 7.3 and later, no extension needed).
 *
 *   php php_chain.php chain SECONDS   main -> Worker::crunch (a method) -> recurse x5 ->
 *                                     {closure} (through array_map, an internal function) ->
 *                                     leaf -> spin, the leaf doing the work
 *   php php_chain.php trace           prints debug_backtrace()'s functions as seen from spin,
 *                                     root first, one per line (the tests' reference order)
 *   as a php-fpm script (?seconds=S)  the chain for S seconds per request, then "served by PID"
 *
 * It prints "started" once running. Line numbers the tests look for are marked "LINE:NAME". */

function spin($n)
{
    global $trace;
    if ($trace) {
        $trace = false;
        $names = [];
        foreach (array_reverse(debug_backtrace()) as $f) {
            $names[] = (isset($f['class']) ? $f['class'] . '::' : '') . $f['function'];
        }
        echo implode("\n", $names), "\n";
    }
    $s = 0;
    for ($i = 0; $i < $n; $i++) {
        $s = ($s * 31 + $i) % 1000003; // LINE:spin
    }
    return $s;
}

function leaf($n)
{
    return spin($n); // LINE:leaf
}

function recurse($depth, $n)
{
    if ($depth == 0) {
        return array_map(function ($x) { return leaf($x); }, [$n])[0]; // LINE:closure
    }
    return recurse($depth - 1, $n); // LINE:recurse
}

class Worker
{
    public static function crunch($seconds)
    {
        $end = microtime(true) + $seconds;
        $s = 0;
        while (microtime(true) < $end) {
            $s += recurse(5, 20000); // LINE:crunch
        }
        return $s;
    }
}

$trace = false;
if (PHP_SAPI === 'cli') {
    $mode = $argv[1] ?? 'chain';
    if ($mode === 'trace') {
        $trace = true;
        Worker::crunch(0.01);
        exit(0);
    }
    echo "started\n";
    Worker::crunch((float)($argv[2] ?? 10)); // LINE:main
} else {
    Worker::crunch((float)($_GET['seconds'] ?? 1)); // LINE:fpm
    echo "served by ", getmypid(), "\n";
}
