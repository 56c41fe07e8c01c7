"""Busy Python for the unwinding tests: pure-Python recursion in /usr/bin/python3.11 (built
without frame pointers) for argv[1] seconds. The interpreter's C stack stays shallow
(3.11 runs Python-to-Python calls inside one _PyEval_EvalFrameDefault), so a whole stack is
_start -> __libc_start_call_main -> main -> Py_BytesMain -> ... -> _PyEval_EvalFrameDefault."""
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        fib(20)


work(float(sys.argv[1]))
