"""pyroscope.write through a 60 s Pyroscope outage: the profiler keeps appending (never blocked),
the endpoint queue keeps the newest profiles within its byte bound, and when the server comes back
on the same port it receives the queued profiles exactly once. Memory stays within the bound.
Takes about 75 s."""
import json
import os
import subprocess
import time
import unittest

from np import tmpdir
from write_harness import HARNESS, parse_metrics
from pyroscope import PyroscopeServer

# Mostly waiting for the outage to pass, on its own ports: tests/run.py runs it beside the others.
BACKGROUND = True

QUEUE_BYTES = 4 << 20
OUTAGE_S = 60
INTERVAL_MS = 250
PAD = 200_000  # hex filler: each profile is ~100 KB gzipped, so the outage overflows the queue ~3 times


class Outage(unittest.TestCase):
    def test_server_down_60s_then_back_gets_queued_profiles(self):
        d = tmpdir(self)
        srv = PyroscopeServer().start()
        port = srv.port
        metrics_file = os.path.join(d, "metrics.txt")
        spec = {
            "write": {"endpoint": [{"url": srv.url, "remote_timeout": "2s", "min_backoff_period": "100ms",
                                    "max_backoff_period": "2s", "max_backoff_retries": 0,
                                    "queue_max_bytes": QUEUE_BYTES}]},
            "profiles": [{"labels": {"__name__": "process_cpu", "service_name": "outage", "seq": "{n}",
                                     "appended_ms": "{ms}"},
                          "stacks": [{"frames": ["main", "loop"], "count": 7}], "pad_bytes": PAD}],
            "duration": f"{OUTAGE_S + 9}s", "interval": f"{INTERVAL_MS}ms", "wait_idle": "20s",
            "shutdown_flush": "5s", "metrics_file": metrics_file,
        }
        spec_path = os.path.join(d, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        harness = subprocess.Popen([HARNESS, spec_path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: harness.poll() is None and harness.kill())

        max_queue_gauge = 0.0

        def sample_gauge():
            nonlocal max_queue_gauge
            try:
                with open(metrics_file) as f:
                    m = parse_metrics(f.read())
            except (OSError, AssertionError):
                return
            for k, v in m.items():
                if k.startswith("pyroscope_write_queue_bytes{"):
                    max_queue_gauge = max(max_queue_gauge, v)

        time.sleep(3)
        before = len(srv.pushes())
        srv.stop()
        down_ms = time.time() * 1000
        while time.time() * 1000 < down_ms + OUTAGE_S * 1000:
            sample_gauge()
            time.sleep(0.2)
        srv2 = PyroscopeServer(port=port).start()
        self.addCleanup(srv2.stop)
        up_ms = time.time() * 1000
        out, err = harness.communicate(timeout=120)
        res = json.loads(out.strip().splitlines()[-1])
        self.assertEqual(harness.returncode, 0, err[-3000:])
        sample_gauge()

        self.assertGreater(before, 5)
        pushes = srv.pushes() + srv2.pushes()
        for r in srv.all_requests() + srv2.all_requests():
            self.assertEqual(r["violations"], [])
        seqs = [int(p["series"][0]["labels"]["seq"]) for p in pushes]
        self.assertEqual(len(seqs), len(set(seqs)), "a profile was delivered twice")

        appended = res["appended"]
        m = parse_metrics(res["metrics"])
        ep = f'{{endpoint="{srv.url}"}}'
        sent = m["pyroscope_write_sent_profiles_total" + ep]
        dropped = m["pyroscope_write_dropped_profiles_total" + ep]
        self.assertEqual(sent, len(pushes))
        self.assertEqual(sent + dropped, appended)
        self.assertGreater(m["pyroscope_write_retries_total" + ep], 10)

        # Profiles appended while the server was down: the newest ones survive, the oldest are dropped.
        during = sorted((int(p["series"][0]["labels"]["appended_ms"]), s)
                        for p, s in zip(pushes, seqs)
                        if down_ms < int(p["series"][0]["labels"]["appended_ms"]) < up_ms)
        per_profile = QUEUE_BYTES / pushes[-1]["series"][0]["profiles"][0]["compressed_len"]
        self.assertGreaterEqual(len(during), int(per_profile * 0.8), (len(during), per_profile))
        outage_appends = OUTAGE_S * 1000 / INTERVAL_MS
        self.assertLess(len(during), outage_appends / 2)  # the bound really dropped most of them
        newest_during = during[-1][0]
        self.assertGreater(newest_during, up_ms - 2 * INTERVAL_MS - 500)
        self.assertGreater(during[0][0], down_ms + 20_000)  # the first ones were the ones dropped
        after = [s for p, s in zip(pushes, seqs) if int(p["series"][0]["labels"]["appended_ms"]) > up_ms]
        self.assertGreater(len(after), 10)

        # Memory: the queue never held more than its bound, and the process did not grow past it.
        st = res["endpoints"][0]
        self.assertLessEqual(st["max_queued_bytes"], QUEUE_BYTES)
        self.assertLessEqual(max_queue_gauge, QUEUE_BYTES)
        self.assertGreater(max_queue_gauge, QUEUE_BYTES * 0.8)
        growth_kb = res["peak_rss_kb"] - res["baseline_rss_kb"]
        self.assertLess(growth_kb, QUEUE_BYTES / 1024 + 6 * 1024, res)
        print(f"outage: appended={appended} sent={int(sent)} dropped={int(dropped)} "
              f"during_outage_delivered={len(during)} rss_growth_kb={growth_kb} "
              f"max_queue_bytes={st['max_queued_bytes']}", flush=True)


if __name__ == "__main__":
    unittest.main()
