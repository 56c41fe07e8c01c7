"""The web UI end to end: a C workload whose CPU time is in one uniquely named function
is profiled by the real BPF engine (build/harness/http_ui, PID target, 1 s collect
interval) into the local store; a WebSocket client gets the update; the pyroscope.ebpf
metrics count the profiles; headless Chromium loads the page and shows the function in
the flame graph and in the top table; a screenshot is saved to build/artifacts/. Also
the empty state, and that SIGTERM flushes the last interval and exits within 5 s.
Profile types (off-CPU, uprobe) in the UI: test_http_ui_types.py."""
import html.parser
import json
import os
import struct
import subprocess
import time
import unittest

import chromium
import promtext
from http_ui_harness import Harness
from np import ROOT, build_workload, tmpdir
from wsclient import WebSocket

HOT = "nodeprof_ui_hot_function_7f3a"
SERVICE = "ui-workload"
ARTIFACTS = os.path.join(ROOT, "build", "artifacts")


class Dom(html.parser.HTMLParser):
    """Collects elements: (tag, attrs dict, text directly inside)."""

    def __init__(self, text):
        super().__init__()
        self.elements = []
        self.stack = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        el = [tag, dict(attrs), ""]
        self.elements.append(el)
        if tag not in ("br", "input", "link", "meta", "img"):
            self.stack.append(el)

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if self.stack:
            self.stack[-1][2] += data

    def find(self, tag=None, cls=None, **attrs):
        out = []
        for t, a, text in self.elements:
            if tag and t != tag:
                continue
            if cls and cls not in a.get("class", "").split():
                continue
            if any(a.get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            out.append((t, a, text))
        return out


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise AssertionError(f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


class Ui(unittest.TestCase):
    def test_real_workload_in_flamegraph_table_and_screenshot(self):
        d = tmpdir(self)
        exe = build_workload("ui_hot", d)
        work = subprocess.Popen([exe, "60"])
        self.addCleanup(lambda: (work.kill(), work.wait()))
        targets = os.path.join(d, "targets.json")
        with open(targets, "w") as f:
            json.dump([{"__process_pid__": str(work.pid), "service_name": SERVICE}], f)
        h = Harness(self, "--targets", targets, "--collect-interval", "1s", "--sample-rate", "99",
                    "--notify-interval", "200ms")
        ws = WebSocket(h.host, h.port, "/ws")
        self.addCleanup(ws.close)

        # The WebSocket hears about the workload's first profile.
        deadline = time.time() + 20
        msg = None
        while time.time() < deadline:
            m = json.loads(ws.recv(timeout=max(0.1, deadline - time.time())))
            if m["type"] == "profiles" and SERVICE in m["services"]:
                msg = m
                break
        self.assertIsNotNone(msg, "no WebSocket update within 20 s")
        self.assertEqual(msg["types"], ["process_cpu:cpu:nanoseconds:cpu:nanoseconds"])  # the engine's CPU profiles

        # The store has the hot function on top; wait for a few seconds of samples.
        top = None
        deadline = time.time() + 20
        while time.time() < deadline:
            st, _, body = h.get(f"/api/top?service={SERVICE}&from=now-5m")
            self.assertEqual(st, 200)
            top = json.loads(body)
            if top["total"] >= 2_000_000_000:
                break
            time.sleep(0.5)
        self.assertGreater(top["total"], 1_000_000_000, top)
        first = top["functions"][0]
        self.assertEqual(first["name"], HOT, top["functions"][:5])
        self.assertGreater(first["self"], 0.8 * top["total"])
        caller = [f for f in top["functions"] if f["name"] == "nodeprof_ui_caller"][0]
        self.assertGreaterEqual(caller["total"], first["self"])
        st, _, body = h.get(f"/api/services")
        procs = json.loads(body)["services"][0]["processes"]
        self.assertEqual(procs[0]["id"], f"pid:{work.pid}")
        self.assertEqual(procs[0]["name"], "ui_hot")

        # The engine's metrics, as Alloy names them.
        fams = promtext.parse(h.get("/metrics")[2].decode())
        labels = {"service_name": SERVICE}
        self.assertGreaterEqual(fams["pyroscope_ebpf_pprofs_total"].value(labels), 1)
        self.assertGreater(fams["pyroscope_ebpf_pprof_bytes_total"].value(labels), 100)
        self.assertGreaterEqual(fams["pyroscope_ebpf_pprof_samples_total"].value(labels), 1)
        self.assertEqual(fams["pyroscope_ebpf_active_targets"].value(), 1)
        self.assertGreaterEqual(fams["pyroscope_ebpf_profiling_sessions_total"].value(), 1)
        self.assertGreater(fams["nodeprof_ebpf_bpf_samples_total"].value(), 50)

        # The page, rendered by Chromium: the function is a flame graph node and a table row.
        dom = Dom(chromium.dump_dom(h.url("/#range=5m")))
        nodes = dom.find("div", cls="fg-node", data_name=HOT)
        self.assertTrue(nodes, "the hot function is not in the flame graph")
        # The widest: the first samples of a process, taken before its unwind tables are
        # loaded, are walked with frame pointers only and root elsewhere.
        def width_of(node):
            return float(node[1]["style"].split("width:")[1].split("px")[0])
        widest = max(nodes, key=width_of)
        self.assertGreater(width_of(widest), 700, "the hot function should span most of the graph")
        self.assertEqual(widest[2], HOT)  # wide enough to carry its name
        for name in ("total", SERVICE, "main", "nodeprof_ui_caller"):
            self.assertTrue(dom.find("div", cls="fg-node", data_name=name), name)
        rows = dom.find("td", cls="fn")
        self.assertEqual(rows[0][2], HOT, [r[2] for r in rows[:5]])
        self.assertIn("hidden", dom.find(id="empty")[0][1])
        svc_opts = [t for t in dom.find("option") if t[1].get("value") == SERVICE]
        self.assertTrue(svc_opts, "the service filter lists the workload")
        dl = dom.find("a", id="download")[0][1]
        self.assertTrue(dl["href"].startswith("/api/pprof?"))

        # Interaction, driven over the DevTools protocol: zoom by click, reset, search, sort.
        with chromium.DevTools() as b:
            b.navigate(h.url("/#range=5m&group=none"))
            node = f'document.querySelector(\'.fg-node[data-name="{HOT}"]\')'
            b.wait(f"!!{node}")
            full = b.eval("document.getElementById('flame').clientWidth")
            self.assertLess(b.eval(f"{node}.getBoundingClientRect().width"), full * 1.01)
            b.eval("document.querySelector('.fg-node[data-name=\"nodeprof_ui_caller\"]').click()")
            # zoomed: the caller spans the whole width, its ancestors are drawn dimmed above it
            self.assertGreater(b.eval("document.querySelector('.fg-node[data-name=\"nodeprof_ui_caller\"]')"
                                      ".getBoundingClientRect().width"), full * 0.98)
            self.assertFalse(b.eval("document.getElementById('reset').disabled"))
            self.assertTrue(b.eval("document.querySelector('.fg-node.ancestor[data-name=\"main\"]') !== null"))
            self.assertEqual(b.eval("document.querySelectorAll('.fg-node[data-name=\"total\"]').length"), 1)
            b.eval("document.getElementById('reset').click()")
            self.assertTrue(b.eval("document.getElementById('reset').disabled"))
            self.assertEqual(b.eval("document.querySelectorAll('.fg-node.ancestor').length"), 0)
            # search: the hot function is highlighted, the rest dimmed, the table row marked
            b.eval("(() => { const s = document.getElementById('search'); s.value = 'hot_function';"
                   " s.dispatchEvent(new Event('input')); })()")
            b.wait(f"{node}.classList.contains('match')")
            self.assertTrue(b.eval("document.querySelector('.fg-node[data-name=\"main\"]').classList.contains('dim')"))
            self.assertEqual(b.eval("document.querySelector('#top tbody tr.match').dataset.name"), HOT)
            self.assertIn("matched", b.eval("document.getElementById('matched').textContent"))
            # sort the table by name, then by name descending
            names = "[...document.querySelectorAll('#top tbody tr')].map(r => r.dataset.name)"
            b.eval("document.querySelector('#top th[data-key=name]').click()")
            asc = b.eval(names)
            self.assertEqual(asc, b.eval(f"{names}.sort((a, b) => a.localeCompare(b))"))
            b.eval("document.querySelector('#top th[data-key=name]').click()")
            self.assertEqual(b.eval(names), list(reversed(asc)))
            self.assertNotEqual(asc[0], HOT)  # no longer sorted by self
            # the process filter narrows the queries: a process without samples empties the view
            b.navigate(h.url("/?reload=1#range=5m&process=pid:1"))
            b.wait("!document.getElementById('empty').hidden")

        # A screenshot with the search highlighting the function, kept as an artefact.
        shot = chromium.screenshot(h.url(f"/#range=5m&search={HOT}"), os.path.join(ARTIFACTS, "http_ui.png"))
        w, hgt = png_size(shot)
        self.assertEqual((w, hgt), (1400, 1000))
        self.assertGreater(os.path.getsize(shot), 20000)

        # SIGTERM: the last interval is flushed into the store, exit within 5 s.
        before = json.loads(h.get("/api/stats")[2])["profiles"]
        rc, took, out = h.stop()
        self.assertEqual(rc, 0, h.stderr)
        self.assertLess(took, 5)
        final = json.loads(out.strip().splitlines()[-1])
        self.assertGreaterEqual(final["profiles"], before)
        self.assertLessEqual(final["bytes"], final["budget_bytes"])

    def test_empty_state(self):
        h = Harness(self)
        dom = Dom(chromium.dump_dom(h.url("/"), budget_ms=3000))
        empty = dom.find(id="empty")[0]
        self.assertNotIn("hidden", empty[1])
        self.assertTrue(dom.find("p", cls="big"))
        self.assertIn("No samples yet", dom.find("p", cls="big")[0][2])
        self.assertFalse(dom.find("div", cls="fg-node"))
        self.assertIn("No samples yet", [t for _, _, t in dom.find("td")])
        self.assertIn("disabled", dom.find("a", id="download")[0][1]["class"])
        self.assertIn("hidden", dom.find("label", id="type-filter")[0][1])  # nothing to choose from


if __name__ == "__main__":
    unittest.main()
