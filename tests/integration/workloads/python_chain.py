"""A CPU-bound Python program with a known call chain, for the Python stack tests and
benchmark. Runs on every CPython from 3.6 on, standard library only.

  python_chain.py chain SECONDS    <module> -> loop -> gen (a generator) -> recurse x6 ->
                                   Worker.crunch (a method), the leaf doing the work
  python_chain.py threads SECONDS  two threads: alpha_loop -> alpha_leaf and
                                   beta_loop -> beta_leaf, each spinning on its own
Line numbers the tests look for are marked with "# LINE:NAME"."""
import sys
import threading
import time


class Worker:
    def crunch(self, n):
        s = 0
        for i in range(n):
            s += i * i  # LINE:crunch
        return s


def recurse(depth, w):
    if depth == 0:
        return w.crunch(2000)
    return recurse(depth - 1, w)


def gen(w):
    while True:
        yield recurse(5, w)


def loop(seconds):
    w = Worker()
    end = time.time() + seconds
    g = gen(w)
    while time.time() < end:
        next(g)


def alpha_leaf():
    s = 0
    for i in range(3000):
        s += i ^ 7
    return s


def alpha_loop(end):
    while time.time() < end:
        alpha_leaf()


def beta_leaf():
    s = 1
    for i in range(3000):
        s = (s * 3 + i) % 1000003
    return s


def beta_loop(end):
    while time.time() < end:
        beta_leaf()


def threads(seconds):
    end = time.time() + seconds
    ts = [threading.Thread(target=alpha_loop, args=(end,)), threading.Thread(target=beta_loop, args=(end,))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


if __name__ == "__main__":
    mode, seconds = sys.argv[1], float(sys.argv[2])
    sys.stdout.write("started\n")
    sys.stdout.flush()
    if mode == "chain":
        loop(seconds)
    else:
        threads(seconds)
