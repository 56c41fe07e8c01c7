"""Profile types in the local UI (issue 20): CPU, off-CPU and uprobe profiles of one
process, pushed into build/harness/http_ui as the engine pushes them (__name__ and the
builder's sample and period types), are kept apart. The API: /api/types lists them,
every query takes `type` (default CPU) and answers for that type only, in its unit; an
unknown type is a 400 that lists the types; the pprof download has the type's sample
and period types; the WebSocket update names the types that got profiles. The page,
in headless Chromium: the type selector, each type's flame graph, top table, timeline
and tooltip with the right unit, the type in the URL and in every API call."""
import json
import time
import unittest
import urllib.parse

import chromium
import pprof
from http_ui_harness import Harness
from pprof_build import build
from wsclient import WebSocket

PPROF = {"Content-Type": "application/x-protobuf"}
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
OFFCPU = "offcpu:offcpu:nanoseconds::"
UPROBE = "process_cpu:uprobe:count:uprobe:count"
CPU_LEAF = "nodeprof_types_cpu_leaf"
OFF_LEAF = "nodeprof_types_futex_wait"
PROBED = "nodeprof_types_probed_fn"
MS10 = 10_000_000


def push(h, stacks, kind="cpu", name=None, service="svc", pid=11):
    q = f"/harness/pprof?service={service}&pid={pid}"
    if name is not None:
        q += "&name=" + urllib.parse.quote(name)
    st, _, body = h.request("POST", q, body=build(stacks, kind=kind), headers=PPROF)
    if st != 200:
        raise AssertionError(f"push {kind}: {st} {body!r}")


def push_three(h):
    """One process's CPU (30 samples at 100 Hz), off-CPU (250 ms) and uprobe (1234 calls) profiles."""
    push(h, {(CPU_LEAF, "compute", "main"): 30}, name="process_cpu")
    push(h, {(OFF_LEAF, "lock", "main"): 200_000_000, ("read", "main"): 50_000_000}, kind="offcpu", name="offcpu")
    push(h, {(PROBED, "main"): 1234}, kind="uprobe", name="process_cpu")


def names(node, out=None):
    out = set() if out is None else out
    out.add(node["name"])
    for c in node.get("children", []):
        names(c, out)
    return out


def t(type_id):
    return "type=" + urllib.parse.quote(type_id)


class Api(unittest.TestCase):
    def setUp(self):
        self.h = Harness(self)
        push_three(self.h)

    def get_json(self, path):
        st, hd, body = self.h.get(path)
        self.assertEqual(st, 200, body)
        self.assertEqual(hd["content-type"], "application/json")
        return json.loads(body)

    def test_types_listed(self):
        got = self.get_json("/api/types?from=now-5m")
        self.assertEqual(got["default"], CPU)
        self.assertEqual([(x["id"], x["name"], x["label"], x["unit"], x["total"]) for x in got["types"]], [
            (CPU, "process_cpu", "CPU", "nanoseconds", 30 * MS10),
            (OFFCPU, "offcpu", "Off-CPU", "nanoseconds", 250_000_000),
            (UPROBE, "process_cpu", "uprobe calls", "count", 1234),
        ])
        # a range without data lists nothing
        self.assertEqual(self.get_json("/api/types?from=0&until=1000")["types"], [])
        # another __name__ is a type of its own; a profile without one gets its kind's
        push(self.h, {("other", "main"): 2}, name="node_cpu", pid=12)
        push(self.h, {("x", "main"): 5}, kind="offcpu", name="", pid=13)
        got = {x["id"]: x for x in self.get_json("/api/types")["types"]}
        self.assertEqual(got["node_cpu:cpu:nanoseconds:cpu:nanoseconds"]["label"], "CPU (node_cpu)")
        self.assertEqual(got[OFFCPU]["total"], 250_000_005)
        self.assertEqual(len(got), 4)

    def test_every_query_reads_one_type(self):
        cases = [(None, "nanoseconds", 30 * MS10, CPU_LEAF), (CPU, "nanoseconds", 30 * MS10, CPU_LEAF),
                 (OFFCPU, "nanoseconds", 250_000_000, OFF_LEAF), (UPROBE, "count", 1234, PROBED)]
        leaves = {CPU_LEAF, OFF_LEAF, PROBED, "read"}
        for type_id, unit, total, leaf in cases:
            q = "&" + t(type_id) if type_id else ""
            fg = self.get_json("/api/flamegraph?group=none" + q)
            self.assertEqual((fg["type"], fg["unit"], fg["total"]), (type_id or CPU, unit, total), type_id)
            shown = names(fg["tree"]) & leaves
            self.assertIn(leaf, shown)
            self.assertEqual(shown - {leaf, "read"} if type_id == OFFCPU else shown - {leaf}, set(), type_id)
            top = self.get_json("/api/top?limit=10" + q)
            self.assertEqual((top["unit"], top["total"], top["functions"][0]["name"]), (unit, total, leaf))
            tl = self.get_json("/api/timeline?from=now-5m" + q)
            self.assertEqual((tl["type"], tl["unit"]), (type_id or CPU, unit))
            self.assertEqual(sum(p[1] for p in tl["points"]), total)
            svc = self.get_json("/api/services?from=now-5m" + q)["services"]
            self.assertEqual([(s["name"], s["total"]) for s in svc], [("svc", total)])
            self.assertEqual(svc[0]["processes"][0]["total"], total)
        # a known type without data is empty, not an error
        h2 = Harness(self)
        fg = json.loads(h2.get("/api/flamegraph?" + t(UPROBE))[2])
        self.assertEqual((fg["unit"], fg["total"]), ("count", 0))

    def test_unknown_type_is_400_with_the_types(self):
        push(self.h, {("other", "main"): 2}, name="node_cpu", pid=12)
        for api in ("types", "services", "flamegraph", "top", "timeline", "pprof"):
            for bad in ("cpu", "offcpu", "process_cpu:cpu:nanoseconds", CPU + ":", "x\"<y>"):
                st, hd, body = self.h.get(f"/api/{api}?" + t(bad))
                self.assertEqual(st, 400, f"{api} {bad}: {body[:200]}")
                text = body.decode()
                self.assertIn(f'unknown profile type "{bad}"', text)
                for known in (CPU, OFFCPU, UPROBE, "node_cpu:cpu:nanoseconds:cpu:nanoseconds"):
                    self.assertIn(known, text)
        # an empty type is the default
        self.assertEqual(self.get_json("/api/top?type=")["type"], CPU)

    def test_pprof_download_of_each_type(self):
        want = {CPU: (("cpu", "nanoseconds"), ("cpu", "nanoseconds"), MS10, 30 * MS10, ""),
                OFFCPU: (("offcpu", "nanoseconds"), ("", ""), 1, 250_000_000, "-offcpu"),
                UPROBE: (("uprobe", "count"), ("uprobe", "count"), 1, 1234, "-uprobe")}
        for type_id, (stype, ptype, period, total, suffix) in want.items():
            st, hd, body = self.h.get("/api/pprof?service=svc&" + t(type_id))
            self.assertEqual(st, 200, body)
            self.assertRegex(hd["content-disposition"],
                             rf'^attachment; filename="nodeprof-svc{suffix}-\d{{8}}T\d{{6}}Z\.pb\.gz"$')
            p = pprof.decode(body, ingest=False)
            strs = p["string_table"]
            self.assertEqual(len(p["sample_type"]), 1)
            self.assertEqual(tuple(strs[i] for i in p["sample_type"][0]), stype, type_id)
            pt = p.get("period_type")
            self.assertEqual(tuple(strs[i] for i in pt) if pt else ("", ""), ptype, type_id)
            self.assertEqual(p["period"], period)
            self.assertEqual(sum(s["value"][0] for s in p["sample"]), total)
            self.assertEqual({f.split(";")[-1] for f in pprof.folded(p)},
                             {CPU: {CPU_LEAF}, OFFCPU: {OFF_LEAF, "read"}, UPROBE: {PROBED}}[type_id])
        st, _, body = self.h.get("/api/pprof?service=nobody&" + t(OFFCPU))
        self.assertEqual(st, 404)

    def test_websocket_names_the_types(self):
        h = Harness(self, "--notify-interval", "100ms")
        ws = WebSocket(h.host, h.port, "/ws")
        self.addCleanup(ws.close)
        time.sleep(0.2)
        push(h, {(OFF_LEAF, "main"): 1000}, kind="offcpu", name="offcpu")
        msg = json.loads(ws.recv(timeout=5))
        self.assertEqual((msg["type"], msg["services"], msg["types"]), ("profiles", ["svc"], [OFFCPU]))
        push(h, {(PROBED, "main"): 1}, kind="uprobe", name="process_cpu")
        push(h, {(CPU_LEAF, "main"): 1})
        seen = set()
        deadline = time.time() + 5
        while seen != {UPROBE, CPU} and time.time() < deadline:
            seen |= set(json.loads(ws.recv(timeout=5))["types"])
        self.assertEqual(seen, {UPROBE, CPU})


class Page(unittest.TestCase):
    def test_type_selector_and_units(self):
        h = Harness(self, "--notify-interval", "100ms")
        push_three(h)
        with chromium.DevTools() as b:
            # Every API call the page makes, to check that each names the type.
            b.navigate(h.url("/#range=5m&group=none"))
            node = lambda name: f"document.querySelector('.fg-node[data-name=\"{name}\"]')"  # noqa: E731
            text = lambda id_: b.eval(f"document.getElementById('{id_}').textContent")  # noqa: E731
            b.wait(f"!!{node(CPU_LEAF)}")
            b.eval("window.__calls = []; const f = window.fetch;"
                   "window.fetch = (u, o) => { window.__calls.push(String(u)); return f(u, o); }; 1")
            # CPU by default; the selector offers the three types, in order, with their labels
            self.assertFalse(b.eval("document.getElementById('type-filter').hidden"))
            self.assertEqual(b.eval("[...document.querySelectorAll('#type option')].map(o => [o.value, o.textContent])"),
                             [[CPU, "CPU"], [OFFCPU, "Off-CPU"], [UPROBE, "uprobe calls"]])
            self.assertEqual(b.eval("document.getElementById('type').value"), CPU)
            self.assertFalse(b.eval(f"!!{node(OFF_LEAF)} || !!{node(PROBED)}"))
            self.assertEqual(text("total"), "300.0 ms CPU")
            self.assertEqual(b.eval("document.querySelector('#top tbody tr td.num').textContent"), "300.0 ms")

            # Off-CPU: its stacks only, in time
            b.eval(f"(() => {{ const s = document.getElementById('type'); s.value = '{OFFCPU}';"
                   " s.dispatchEvent(new Event('change')); })()")
            b.wait(f"!!{node(OFF_LEAF)}")
            b.wait(f"!{node(CPU_LEAF)}")
            self.assertEqual(text("total"), "250.0 ms Off-CPU")
            self.assertEqual(b.eval("document.querySelector('#top tbody tr').dataset.name"), OFF_LEAF)
            self.assertEqual(b.eval("document.querySelector('#top tbody tr td.num').textContent"), "200.0 ms")
            self.assertIn("type=" + urllib.parse.quote(OFFCPU, safe=""), b.eval("location.hash").replace(":", "%3A"))

            # uprobe: calls, in the table, the tooltip, the timeline, the summary and the filters
            b.eval(f"(() => {{ const s = document.getElementById('type'); s.value = '{UPROBE}';"
                   " s.dispatchEvent(new Event('change')); })()")
            b.wait(f"!!{node(PROBED)}")
            b.wait(f"!{node(OFF_LEAF)}")
            self.assertEqual(text("total"), "1234 uprobe calls")
            self.assertEqual(b.eval("[...document.querySelector('#top tbody tr').querySelectorAll('td.num')]"
                                    ".map(td => td.textContent)"), ["1234 calls", "100.00%", "1234 calls", "100.00%"])
            b.eval(f"{node(PROBED)}.dispatchEvent(new MouseEvent('mousemove', {{bubbles: true, clientX: 50, clientY: 50}}))")
            tip = text("tooltip")
            self.assertIn("total 1234 calls", tip)
            self.assertIn("self 1234 calls", tip)
            self.assertIn(": 1234 calls", b.eval("document.querySelector('#timeline rect title').textContent"))
            self.assertEqual(b.eval("document.getElementById('timeline').getAttribute('aria-label')"),
                             "uprobe calls per interval")
            self.assertIn("1234 calls", b.eval("document.querySelector('#service option[value=\"svc\"]').textContent"))
            dl = b.eval("document.getElementById('download').getAttribute('href')")
            self.assertIn("type=" + urllib.parse.quote(UPROBE, safe=""), dl)
            st, _, body = h.get(dl)
            self.assertEqual(st, 200)
            p = pprof.decode(body, ingest=False)
            self.assertEqual([p["string_table"][i] for i in p["sample_type"][0]], ["uprobe", "count"])

            # every query the page made names the type; /api/types lists them all
            calls = b.eval("window.__calls")
            self.assertTrue(any(c.startswith("/api/types?") for c in calls), calls)
            for c in calls:
                path, _, qs = c.partition("?")
                params = urllib.parse.parse_qs(qs, keep_blank_values=True)
                if path == "/api/types":
                    self.assertNotIn("type", params, c)
                else:
                    self.assertIn(params.get("type", [None])[0], (CPU, OFFCPU, UPROBE), c)

            # a live update of the selected type refreshes the view
            push(h, {(PROBED, "main"): 66}, kind="uprobe", name="process_cpu")
            b.wait(f"document.getElementById('total').textContent === '1300 uprobe calls'")

            # the type comes back from the URL
            b.navigate(h.url(f"/?again=1#range=5m&group=none&type={OFFCPU}"))
            b.wait(f"!!{node(OFF_LEAF)}")
            self.assertEqual(b.eval("document.getElementById('type').value"), OFFCPU)
            # an unknown one in the URL: the server's message, and the selector to leave it
            b.navigate(h.url("/?again=2#range=5m&type=bogus"))
            b.wait("document.getElementById('status').textContent.includes('unknown profile type')")
            self.assertIn(CPU, text("status"))
            self.assertFalse(b.eval("document.getElementById('type-filter').hidden"))
            self.assertEqual(b.eval("[...document.querySelectorAll('#type option')].map(o => o.value)"),
                             [CPU, OFFCPU, UPROBE, "bogus"])

    def test_selector_hidden_with_cpu_only(self):
        h = Harness(self)
        push(h, {(CPU_LEAF, "main"): 3})
        dom = chromium.dump_dom(h.url("/#range=5m"))
        self.assertIn(CPU_LEAF, dom)
        self.assertRegex(dom, r'<label id="type-filter" hidden(="")?>')


if __name__ == "__main__":
    unittest.main()
