"""Kubernetes discovery: the list+watch protocol against the test kube-apiserver, and
what happens when things go wrong: 410 both ways, connections cut (between and inside
events), 5xx and backoff, slow and hanging responses, paging and expired continue
tokens, bookmarks, watch timeouts, over-long events (docs/specs/kubernetes.md §3)."""
import time
import unittest

import k8s
from k8s import pod

# Mostly waiting on its test apiserver's watches and timeouts (18 s of wall time for under 1 s of
# CPU), on ports of its own: tests/run.py runs it beside the others.
BACKGROUND = True


def lists(srv):
    return [r for r in srv.requests if not r["watch"]]


def watches(srv):
    return [r for r in srv.requests if r["watch"]]


def wait_until(cond, timeout=15.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


class Watch(k8s.Case):
    def test_watch_resumes_from_last_version_and_bookmarks_advance_it(self):
        srv = self.server(bookmark_interval=0.2)
        srv.put("pods", pod("a", node="node-a"))
        h = self.harness(srv, {"selectors": [{"role": "pod", "field": "spec.nodeName=node-a"}]})
        h.wait_for(lambda ts: k8s.names(ts) == ["a"])
        first = srv.wait_requests(lambda r: r["watch"])[0]
        list_rv = int(first["query"]["resourceVersion"])
        self.assertEqual(first["query"]["allowWatchBookmarks"], "true")
        # Changes outside our selection produce no events, only bookmarks with newer versions.
        for i in range(3):
            srv.put("pods", pod(f"elsewhere-{i}", node="node-b"))
        time.sleep(0.6)
        srv.drop_watches()
        again = srv.wait_requests(lambda r: r["watch"] and int(r["query"]["resourceVersion"]) > list_rv)
        self.assertGreaterEqual(int(again[0]["query"]["resourceVersion"]), list_rv + 3)
        # A dropped watch resumes without a relist.
        self.assertEqual(len(lists(srv)), 1)
        srv.put("pods", pod("b", node="node-a"))
        h.wait_for(lambda ts: k8s.names(ts) == ["a", "b"])

    def test_watch_timeout_is_randomised_and_rewatches_without_relist(self):
        srv = self.server()
        srv.put("pods", pod("a"))
        h = self.harness(srv, nodeprof={"min_watch_timeout": "1s"})
        h.wait_for(lambda ts: len(ts) == 1)
        ws = srv.wait_requests(lambda r: r["watch"], timeout=1)
        deadline = time.time() + 6
        while len(watches(srv)) < 3 and time.time() < deadline:
            time.sleep(0.05)
        ws = watches(srv)
        self.assertGreaterEqual(len(ws), 3, "the watch should be re-opened after each server timeout")
        for w in ws:
            self.assertIn(int(w["query"]["timeoutSeconds"]), (1, 2))
        self.assertEqual(len(lists(srv)), 1, "a clean watch end must not relist")

    def test_410_error_event_mid_stream_relists_and_drops_missing_pods(self):
        srv = self.server()
        for n in ("a", "b"):
            srv.put("pods", pod(n))
        h = self.harness(srv)
        h.wait_for(lambda ts: k8s.names(ts) == ["a", "b"])
        srv.put("pods", pod("c"))
        h.wait_for(lambda ts: k8s.names(ts) == ["a", "b", "c"])
        # b goes while we are not told (its event was compacted away); then 410 in the stream.
        srv.delete("pods", "default", "b", record=False)
        srv.inject("error_410", on="watch")
        srv.put("pods", pod("d"))
        got = h.wait_for(lambda ts: k8s.names(ts) == ["a", "c", "d"])
        relist = [r for r in lists(srv)][1:]
        self.assertTrue(relist)
        self.assertNotIn("resourceVersion", relist[0]["query"], "after a 410 the relist is a consistent read")
        self.assertIn("watch expired, relisting", h.log())
        self.assertEqual(len(got), 3)

    def test_410_http_status_on_watch_relists(self):
        srv = self.server()
        srv.expired_as_http_status = True
        for n in ("a", "b"):
            srv.put("pods", pod(n))
        h = self.harness(srv)
        h.wait_for(lambda ts: k8s.names(ts) == ["a", "b"])
        # An established watch (it received an event), dropped after a compaction: the
        # re-watch from our version is answered with HTTP 410.
        self.assertTrue(srv.wait_open_watches())
        srv.put("pods", pod("b", labels={"x": "1"}))
        h.wait_for(lambda ts: len(ts) == 2 and "__meta_kubernetes_pod_label_x" in ts[1])
        srv.delete("pods", "default", "a", record=False)
        srv.compact()
        srv.drop_watches()
        h.wait_for(lambda ts: k8s.names(ts) == ["b"])
        self.assertIn("HTTP 410", h.log())
        self.assertTrue(any(r["query"].get("resourceVersion", "") == "" for r in lists(srv)[1:]))

    def test_connection_cut_in_the_middle_of_an_event(self):
        srv = self.server()
        srv.put("pods", pod("a", labels={"v": "1"}))
        h = self.harness(srv)
        h.wait_for(lambda ts: len(ts) == 1)
        self.assertTrue(srv.wait_open_watches())
        # An established watch (one event received: not a "very short watch")...
        srv.put("pods", pod("a", labels={"v": "1b"}))
        h.wait_for(lambda ts: len(ts) == 1 and ts[0].get("__meta_kubernetes_pod_label_v") == "1b")
        # ...is cut in the middle of the next event.
        srv.inject("cut_event", on="watch")
        srv.put("pods", pod("a", labels={"v": "2"}))
        got = h.wait_for(lambda ts: len(ts) == 1 and ts[0].get("__meta_kubernetes_pod_label_v") == "2")
        self.assertIn('mid_event=true', h.log())
        self.assertEqual(len(lists(srv)), 1, "a cut stream resumes the watch, it does not relist")
        self.assertEqual(len(watches(srv)), 2)
        self.assertEqual(got[0]["__meta_kubernetes_pod_name"], "a")

    def test_events_split_across_chunks_and_batched(self):
        srv = self.server()
        srv.watch_chunk_size = 7
        h = self.harness(srv)
        h.wait_for(lambda ts: ts == [])
        srv.wait_requests(lambda r: r["watch"])
        for i in range(20):
            srv.put("pods", pod(f"p{i:02d}", ip=f"10.0.1.{i}"))
        got = h.wait_for(lambda ts: len(ts) == 20)
        self.assertEqual(k8s.names(got), [f"p{i:02d}" for i in range(20)])

    def test_server_errors_back_off_and_relist_not_older_than(self):
        srv = self.server()
        srv.put("pods", pod("a"))
        h = self.harness(srv)
        h.wait_for(lambda ts: len(ts) == 1)
        self.assertTrue(srv.wait_open_watches())
        first_watch = watches(srv)[0]
        srv.put("pods", pod("a", labels={"seen": "1"}))  # the watch is not a "very short" one
        h.wait_for(lambda ts: len(ts) == 1 and "__meta_kubernetes_pod_label_seen" in ts[0])
        srv.inject("http_status", status=500, on="watch", count=1)
        srv.drop_watches()
        relists = srv.wait_requests(lambda r: not r["watch"] and r["time"] > first_watch["time"], timeout=10)
        self.assertTrue(relists)
        # client-go relists "not older than" the last version seen, unpaged, from the watch cache.
        self.assertEqual(relists[0]["query"].get("resourceVersion"),
                         srv.get("pods", "default", "a")["metadata"]["resourceVersion"])
        self.assertNotIn("limit", relists[0]["query"])
        failed = [w for w in watches(srv) if w["time"] > first_watch["time"]][0]
        self.assertGreaterEqual(relists[0]["time"] - failed["time"], 0.45, "the retry must wait for the backoff")
        srv.put("pods", pod("b"))
        h.wait_for(lambda ts: k8s.names(ts) == ["a", "b"])

    def test_list_backoff_grows_with_jitter(self):
        srv = self.server()
        srv.inject("http_status", status=429, on="list", retry_after=2, reason="TooManyRequests")
        srv.inject("http_status", status=503, on="list")
        srv.put("pods", pod("a"))
        h = self.harness(srv, nodeprof={"initial_wait": "10s"})
        h.wait_for(lambda ts: len(ts) == 1, timeout=20)
        t = [r["time"] for r in lists(srv)]
        self.assertEqual(len(t), 3)
        gaps = [b - a for a, b in zip(t, t[1:])]
        # Retry-After: 2 s is honoured over the first step (0.5 s); then 1 s (the cap), each
        # step stretched by a random factor in [1, 1.5).
        self.assertGreaterEqual(gaps[0], 1.95)
        self.assertLess(gaps[0], 2.5)
        self.assertGreaterEqual(gaps[1], 1.0 - 0.05)
        self.assertLess(gaps[1], 1.5 + 0.3)
        self.assertIn("HTTP 503", h.log())

    def test_paging_and_expired_continue_token(self):
        srv = self.server()
        for i in range(5):
            srv.put("pods", pod(f"p{i}", ip=f"10.0.2.{i}"))
        h = self.harness(srv, nodeprof={"page_size": 2})
        h.wait_for(lambda ts: len(ts) == 5)
        self.assertTrue(srv.wait_open_watches())
        # The first list (resourceVersion=0) is served whole; force a consistent relist: paged.
        srv.inject("error_410", on="watch")
        srv.put("pods", pod("p5", ip="10.0.2.5"))
        wait_until(lambda: len(lists(srv)) == 4 and srv.open_watches, what="a paged relist")
        h.wait_for(lambda ts: len(ts) == 6)
        pages = [r for r in lists(srv)[1:]]
        self.assertEqual([r["query"].get("limit") for r in pages], ["2", "2", "2"])
        self.assertEqual([bool(r["query"].get("continue")) for r in pages], [False, True, True])
        # Now a continue token expires in the middle: the list restarts unpaged.
        srv.inject("http_status", status=410, reason="Expired", on="list", if_continue=True,
                   message="The provided continue parameter is too old to display a consistent list result.")
        srv.inject("error_410", on="watch")
        srv.put("pods", pod("p6", ip="10.0.2.6"))
        wait_until(lambda: len(lists(srv)) >= 7 and srv.open_watches, what="a relist after the expired token")
        h.wait_for(lambda ts: len(ts) == 7)
        later = lists(srv)[4:]
        self.assertGreaterEqual(len(later), 3)
        self.assertEqual(later[1]["query"].get("limit"), "2")
        self.assertTrue(later[1]["query"].get("continue"))
        self.assertNotIn("limit", later[2]["query"], "after an expired continue token the list is unpaged")
        self.assertIn("continue token expired", h.log())

    def test_slow_and_hanging_responses(self):
        srv = self.server()
        for i in range(8):
            srv.put("pods", pod(f"p{i}", annotations={"pad": "x" * 300}))
        # A list trickling in 50-byte chunks still parses; a hanging one times out and is
        # retried; a slow watch answer is fine.
        srv.inject("hang", seconds=1.5, on="list")
        srv.inject("trickle", chunk=50, seconds=0.002, on="list")
        srv.inject("delay", seconds=0.5, on="watch")
        h = self.harness(srv, nodeprof={"request_timeout": "1s", "initial_wait": "10s"})
        got = h.wait_for(lambda ts: len(ts) == 8, timeout=15)
        self.assertEqual(len(got), 8)
        self.assertIn("timed out", h.log())
        self.assertEqual(len(lists(srv)), 2)
        srv.put("pods", pod("late"))
        h.wait_for(lambda ts: len(ts) == 9)
        self.assertEqual(len(watches(srv)), 1)

    def test_truncated_list_is_retried(self):
        srv = self.server()
        for i in range(4):
            srv.put("pods", pod(f"p{i}", annotations={"pad": "y" * 500}))
        srv.inject("cut_list", on="list")
        h = self.harness(srv, nodeprof={"initial_wait": "10s"})
        h.wait_for(lambda ts: len(ts) == 4)
        self.assertEqual(len(lists(srv)), 2)

    def test_over_long_event_and_list_item(self):
        srv = self.server()
        srv.put("pods", pod("ok"))
        srv.put("pods", pod("fat", annotations={"blob": "z" * 100000}))
        h = self.harness(srv, nodeprof={"max_object_bytes": 65536})
        h.wait_for(lambda ts: k8s.names(ts) == ["ok"])
        self.assertIn("skipped a list item larger than the limit", h.log())
        srv.wait_requests(lambda r: r["watch"])
        srv.inject("huge_event", bytes=200000, on="watch")
        srv.put("pods", pod("after"))
        h.wait_for(lambda ts: k8s.names(ts) == ["after", "ok"])
        self.assertIn("longer than the 65536-byte limit", h.log())
        # The stream was restarted with a relist (an event was lost), and things go on.
        self.assertGreaterEqual(len(lists(srv)), 2)
        srv.put("pods", pod("later"))
        h.wait_for(lambda ts: k8s.names(ts) == ["after", "later", "ok"])

    def test_stalled_watch_is_resumed_after_the_idle_timeout(self):
        srv = self.server(bookmark_interval=0.3)
        srv.put("pods", pod("a"))
        h = self.harness(srv, nodeprof={"watch_idle_timeout": "1s"})
        h.wait_for(lambda ts: len(ts) == 1)
        self.assertTrue(srv.wait_open_watches())
        # Bookmarks every 0.3 s keep a quiet watch alive past the idle timeout.
        time.sleep(1.5)
        self.assertEqual(len(watches(srv)), 1)
        # The server goes silent on that connection (no bookmarks either) for a minute.
        srv.inject("stall", seconds=60, on="watch")
        stalled_at = time.time()
        again = srv.wait_requests(lambda r: r["watch"] and r["time"] > stalled_at, timeout=5)
        self.assertTrue(again, "the stalled watch was not resumed")
        # 1 s after the last byte, which was a bookmark at most 0.3 s before the stall.
        self.assertGreaterEqual(again[0]["time"] - stalled_at, 0.65)
        self.assertLess(again[0]["time"] - stalled_at, 2.5)
        self.assertEqual(len(lists(srv)), 1, "a stalled watch resumes, it does not relist")
        self.assertIn("watch stalled", h.log())
        srv.put("pods", pod("b"))
        h.wait_for(lambda ts: k8s.names(ts) == ["a", "b"], timeout=5)
        # The client closed the stalled connection before opening the new one.
        self.assertEqual(srv.max_concurrent_watches, {"/api/v1/pods": 1})

    def test_stop_is_prompt_during_backoff_and_streams(self):
        srv = self.server()
        srv.put("pods", pod("a"))
        h = self.harness(srv)
        h.wait_for(lambda ts: len(ts) == 1)
        srv.wait_requests(lambda r: r["watch"])
        start = time.time()
        self.assertEqual(h.stop(), 0)
        self.assertLess(time.time() - start, 1.0)


if __name__ == "__main__":
    unittest.main()
