#!/usr/bin/env python3
"""Runs one integration test module (unittest) and prints its results as one JSON line
prefixed with "@@RESULTS " for tests/run.py. A skipped test is reported as a failure:
nodeprof's tests always run. Every tool they need comes from make deps, and the
machines they run on (CI included) have root privileges and the eBPF features."""
import importlib.util
import json
import os
import sys
import traceback
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))


class Collect(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.rows = []

    def _name(self, test):
        return test.id().split(".", 1)[-1]

    def startTest(self, test):
        super().startTest(test)
        print(f"  running {self._name(test)}", file=sys.stderr, flush=True)

    def addSuccess(self, test):
        self.rows.append({"name": self._name(test), "ok": True})

    def addFailure(self, test, err):
        self.rows.append({"name": self._name(test), "ok": False, "detail": self._exc_info_to_string(err, test)})

    def addError(self, test, err):
        self.rows.append({"name": self._name(test), "ok": False, "detail": self._exc_info_to_string(err, test)})

    def addSkip(self, test, reason):
        self.rows.append({"name": self._name(test), "ok": False, "detail": f"skipped ({reason}); tests must not skip"})

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self.rows.append({"name": self._name(subtest), "ok": False,
                              "detail": self._exc_info_to_string(err, test)})


def main():
    path = sys.argv[1]
    name = os.path.splitext(os.path.basename(path))[0]
    rows = []
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        suite = unittest.defaultTestLoader.loadTestsFromModule(mod)
        result = Collect()
        suite.run(result)
        rows = result.rows
    except Exception:
        rows.append({"name": "(module)", "ok": False, "detail": traceback.format_exc()})
    sys.stdout.flush()
    print("@@RESULTS " + json.dumps(rows), flush=True)


if __name__ == "__main__":
    main()
