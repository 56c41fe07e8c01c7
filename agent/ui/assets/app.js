// nodeprof UI: a live flame graph and top table over the agent's local profile store.
// Vanilla JS, no dependencies; talks to /api/* and listens on /ws for new profiles.
// One profile type at a time (CPU, off-CPU, uprobe calls): every query names it, and
// values are shown in its unit (time for nanoseconds, calls for counts).
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const ROW = 18;          // px per flame graph row
  const MAX_DOM_NODES = 6000;
  const MIN_PX = 0.5;      // narrower nodes are not drawn
  const CPU_TYPE = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds'; // the API's default

  const state = {
    range: '5m', from: '', until: '', service: '', process: '', group: 'service', live: true,
    type: CPU_TYPE, types: [], unit: 'nanoseconds', error: null,  // error: the last refused query's message
    search: '', zoom: [],  // zoom: path of names from the root to the focused node
    tree: null, total: 0, top: [], topTotal: 0, sortKey: 'self', sortDir: -1,
    services: [], loading: false, again: false, ws: null, wsDelay: 1000, lastUpdate: null,
  };

  // ---- formatting ----
  function fmtNs(ns) {
    if (ns >= 3600e9) return (ns / 3600e9).toFixed(2) + ' h';
    if (ns >= 60e9) return (ns / 60e9).toFixed(2) + ' min';
    if (ns >= 1e9) return (ns / 1e9).toFixed(2) + ' s';
    if (ns >= 1e6) return (ns / 1e6).toFixed(1) + ' ms';
    return (ns / 1e3).toFixed(0) + ' µs';
  }
  function fmtCount(n) {
    if (n >= 1e9) return (n / 1e9).toFixed(2) + 'G';
    if (n >= 1e6) return (n / 1e6).toFixed(2) + 'M';
    if (n >= 1e4) return (n / 1e3).toFixed(1) + 'k';
    return String(n);
  }
  // A value of the selected type, with its unit: a time, or a number of calls.
  function fmtValue(v) {
    if (state.unit === 'nanoseconds') return fmtNs(v);
    return fmtCount(v) + (v === 1 ? ' call' : ' calls');
  }
  // The selected type for people: its label from /api/types ("CPU", "Off-CPU", "uprobe calls").
  function typeLabel() {
    const t = state.types.find((x) => x.id === state.type);
    if (t) return t.label;
    return state.type === CPU_TYPE ? 'CPU' : state.type;
  }
  function pct(v, total) { return total > 0 ? (100 * v / total).toFixed(2) + '%' : '–'; }
  function hashName(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
    return h >>> 0;
  }
  function color(name) {
    const h = hashName(name);
    if (name.indexOf('[k]') >= 0 || /^(do_|__x64_|entry_SYSCALL|sys_|ksys_|__schedule|asm_)/.test(name)) {
      return 'hsl(' + (190 + h % 30) + ',55%,' + (62 + (h >> 8) % 12) + '%)'; // kernel: blue
    }
    return 'hsl(' + (h % 50) + ',82%,' + (60 + (h >> 8) % 14) + '%)';
  }
  function localInput(ms) {
    const d = new Date(ms - new Date().getTimezoneOffset() * 60000);
    return d.toISOString().slice(0, 19);
  }

  // ---- URL state (shareable links) ----
  function saveHash() {
    const p = new URLSearchParams();
    p.set('range', state.range);
    if (state.range === 'custom') { p.set('from', state.from); p.set('until', state.until); }
    if (state.service) p.set('service', state.service);
    if (state.process) p.set('process', state.process);
    if (state.search) p.set('search', state.search);
    if (state.group !== 'service') p.set('group', state.group);
    if (state.type !== CPU_TYPE) p.set('type', state.type);
    history.replaceState(null, '', '#' + p.toString());
  }
  function loadHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    const range = p.get('range');
    if (range && ['1m', '5m', '15m', '1h', 'custom'].includes(range)) state.range = range;
    if (state.range === 'custom') {
      state.from = p.get('from') || String(Date.now() - 15 * 60000);
      state.until = p.get('until') || String(Date.now());
    }
    state.service = p.get('service') || '';
    state.process = p.get('process') || '';
    state.search = p.get('search') || '';
    const g = p.get('group');
    if (g && ['none', 'service', 'process'].includes(g)) state.group = g;
    state.type = p.get('type') || CPU_TYPE; // an unknown one is the server's to refuse (400)
  }

  // The query string of an API call: the range, the profile type unless for /api/types
  // (which lists them all), and the service/process filters.
  function query(withFilters, withType = true) {
    const p = new URLSearchParams();
    if (state.range === 'custom') { p.set('from', state.from); p.set('until', state.until); }
    else { p.set('from', 'now-' + state.range); p.set('until', 'now'); }
    if (withType) p.set('type', state.type);
    if (withFilters) {
      if (state.service) p.set('service', state.service);
      if (state.process) p.set('process', state.process);
    }
    return p.toString();
  }

  async function getJSON(path) {
    const r = await fetch(path, { cache: 'no-store' });
    if (!r.ok) throw new Error(path.split('?')[0] + ': ' + r.status + ' ' + (await r.text()).trim());
    return r.json();
  }

  function setStatus(text, cls) {
    const el = $('status');
    el.textContent = text;
    el.className = 'status' + (cls ? ' ' + cls : '');
  }
  // A refused query's message stays until a query succeeds: the WebSocket opening (or an
  // update arriving) after the refusal must not put "live" over it.
  function liveStatus() {
    if (state.error) { setStatus(state.error, 'down'); return; }
    const t = state.lastUpdate ? ' · updated ' + state.lastUpdate.toLocaleTimeString() : '';
    const connected = state.ws && state.ws.readyState === WebSocket.OPEN;
    setStatus((connected ? (state.live ? 'live' : 'paused') : 'disconnected') + t, connected ? (state.live ? 'live' : '') : 'down');
  }

  // ---- data ----
  async function refresh() {
    if (state.loading) { state.again = true; return; }
    state.loading = true;
    try {
      const q = query(true);
      const group = state.process ? 'none' : state.group;
      // The types first: the selector stays usable when the selected type is refused.
      const typesP = getJSON('/api/types?' + query(false, false));
      const restP = Promise.all([
        getJSON('/api/services?' + query(false)),
        getJSON('/api/flamegraph?' + q + '&group=' + group),
        getJSON('/api/top?' + q + '&limit=1000'),
        getJSON('/api/timeline?' + q),
      ]);
      restP.catch(() => {}); // awaited below, after the types
      const types = await typesP;
      state.types = types.types || [];
      renderTypes();
      const [svc, fg, top, tl] = await restP;
      state.unit = fg.unit || 'nanoseconds';
      state.services = svc.services || [];
      state.tree = fg.tree;
      state.total = fg.total;
      state.top = top.functions || [];
      state.topTotal = top.total;
      state.lastUpdate = new Date();
      renderFilters();
      renderSummary(fg, tl);
      renderFlame();
      renderTop();
      state.error = null;
      liveStatus();
    } catch (e) {
      state.error = 'error: ' + e.message;
      setStatus(state.error, 'down');
    } finally {
      state.loading = false;
      if (state.again) { state.again = false; refresh(); }
    }
  }

  let refreshTimer = null;
  function scheduleRefresh(ms) {
    if (refreshTimer) return;
    refreshTimer = setTimeout(() => { refreshTimer = null; refresh(); }, ms);
  }

  // ---- filters ----
  function option(value, label, selected) {
    const o = document.createElement('option');
    o.value = value;
    o.textContent = label;
    if (selected) o.selected = true;
    return o;
  }
  // The profile type selector: shown once there is a choice (or a type other than CPU is
  // selected, so that one can go back).
  function renderTypes() {
    const sel = $('type');
    sel.textContent = '';
    const types = state.types.slice();
    if (!types.some((t) => t.id === state.type)) types.push({ id: state.type, label: typeLabel() + ' (no data)' });
    for (const t of types) {
      const o = option(t.id, t.label, t.id === state.type);
      o.title = t.id;
      sel.appendChild(o);
    }
    $('type-filter').hidden = !(state.types.length > 1 || state.type !== CPU_TYPE);
  }
  function renderFilters() {
    const svcSel = $('service'), procSel = $('process');
    const services = state.services.slice();
    if (state.service && !services.some((s) => s.name === state.service)) services.push({ name: state.service, total: 0, processes: [] });
    svcSel.textContent = '';
    svcSel.appendChild(option('', 'all services (' + state.services.length + ')', !state.service));
    for (const s of services) svcSel.appendChild(option(s.name, s.name + '  ' + fmtValue(s.total), s.name === state.service));
    procSel.textContent = '';
    procSel.appendChild(option('', 'all processes', !state.process));
    let found = false;
    for (const s of services) {
      if (state.service && s.name !== state.service) continue;
      for (const p of s.processes || []) {
        if (!p.id) continue;
        const label = (state.service ? '' : s.name + ' · ') + p.id + (p.name ? ' (' + p.name + ')' : '') + '  ' + fmtValue(p.total);
        procSel.appendChild(option(p.id, label, p.id === state.process));
        if (p.id === state.process) found = true;
      }
    }
    if (state.process && !found) procSel.appendChild(option(state.process, state.process, true));
    const dl = $('download');
    dl.href = '/api/pprof?' + query(true);
    dl.classList.toggle('disabled', !(state.total > 0));
  }

  function renderSummary(fg, tl) {
    const label = typeLabel();
    // "1.20 s CPU", "350 ms Off-CPU", "7 uprobe calls"
    $('total').textContent = state.total > 0 ? (state.unit === 'nanoseconds' ? fmtNs(state.total) : fmtCount(state.total)) + ' ' + label : '';
    const svg = $('timeline');
    svg.setAttribute('aria-label', label + ' per interval');
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const pts = tl.points || [];
    const now = Date.now();
    let from, until;
    if (state.range === 'custom') { from = Number(state.from); until = Number(state.until); }
    else { until = now; from = now - { '1m': 60e3, '5m': 300e3, '15m': 900e3, '1h': 3600e3 }[state.range]; }
    const step = tl.step || 10000;
    const span = Math.max(until - from, step);
    let max = 0;
    for (const p of pts) max = Math.max(max, p[1]);
    svg.setAttribute('viewBox', '0 0 1000 100');
    for (const p of pts) {
      const x = Math.max(0, (p[0] - from) / span * 1000);
      const w = Math.max(1, step / span * 1000 - 1);
      const h = max > 0 ? p[1] / max * 96 : 0;
      const r = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
      r.setAttribute('x', x.toFixed(2));
      r.setAttribute('y', (100 - h).toFixed(2));
      r.setAttribute('width', w.toFixed(2));
      r.setAttribute('height', h.toFixed(2));
      const title = document.createElementNS('http://www.w3.org/2000/svg', 'title');
      title.textContent = new Date(p[0]).toLocaleTimeString() + ': ' + fmtValue(p[1]);
      r.appendChild(title);
      svg.appendChild(r);
    }
  }

  // ---- flame graph ----
  let drawn = []; // index -> {node, parent index, depth}

  function searchRegex() {
    if (!state.search) return null;
    try { return new RegExp(state.search, 'i'); }
    catch (e) { return new RegExp(state.search.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i'); }
  }

  function renderFlame() {
    const el = $('flame'), empty = $('empty');
    el.textContent = '';
    drawn = [];
    const tree = state.tree;
    if (!tree || !(tree.total > 0)) {
      empty.hidden = false;
      el.style.height = '0px';
      $('reset').disabled = true;
      $('matched').textContent = '';
      return;
    }
    empty.hidden = true;
    // Follow the zoom path as far as it still exists in the new data.
    const ancestors = [];
    let focus = tree;
    const kept = [];
    for (const name of state.zoom) {
      const c = (focus.children || []).find((ch) => ch.name === name);
      if (!c) break;
      ancestors.push(focus);
      focus = c;
      kept.push(name);
    }
    state.zoom = kept;
    $('reset').disabled = kept.length === 0;
    const width = el.clientWidth || 1000;
    const re = searchRegex();
    const frag = document.createDocumentFragment();
    let maxDepth = 0, matched = 0;

    function add(node, x, w, depth, parentIdx, cls) {
      const d = document.createElement('div');
      const idx = drawn.length;
      drawn.push({ node: node, parent: parentIdx, depth: depth, ancestor: cls === 'ancestor' });
      d.className = 'fg-node' + (cls ? ' ' + cls : '');
      d.dataset.idx = idx;
      d.dataset.name = node.name;
      d.style.left = x.toFixed(1) + 'px';
      d.style.top = (depth * ROW) + 'px';
      d.style.width = Math.max(w - 1, 1).toFixed(1) + 'px';
      d.style.background = color(node.name);
      if (re) d.classList.add(re.test(node.name) ? 'match' : 'dim');
      if (w > 30) d.textContent = node.name;
      frag.appendChild(d);
      if (depth > maxDepth) maxDepth = depth;
      return idx;
    }

    let parentIdx = -1;
    ancestors.forEach((a, i) => { parentIdx = add(a, 0, width, i, parentIdx, 'ancestor'); });
    const scale = width / focus.total;
    // Iterative: stacks can be a thousand frames deep.
    const todo = [[focus, 0, ancestors.length, parentIdx, false]];
    while (todo.length && drawn.length < MAX_DOM_NODES) {
      const [n, x, depth, pIdx, underMatch] = todo.pop();
      const w = n.total * scale;
      if (w < MIN_PX) continue;
      const idx = add(n, x, w, depth, pIdx, '');
      const isMatch = re && re.test(n.name);
      if (isMatch && !underMatch) matched += n.total;
      let cx = x;
      const kids = n.children || [];
      const next = [];
      for (const c of kids) { next.push([c, cx, depth + 1, idx, underMatch || isMatch]); cx += c.total * scale; }
      for (let i = next.length - 1; i >= 0; i--) todo.push(next[i]);
    }
    el.style.height = ((maxDepth + 1) * ROW + 2) + 'px';
    el.appendChild(frag);
    $('matched').textContent = re ? 'matched ' + fmtValue(matched) + ' (' + pct(matched, focus.total) + ' of view)' : '';
    markTopMatches(re);
  }

  function pathTo(idx) {
    const path = [];
    for (let i = idx; i >= 0; i = drawn[i].parent) path.push(drawn[i].node.name);
    path.reverse();
    return path.slice(1); // without the root
  }

  function onFlameClick(ev) {
    const d = ev.target.closest('.fg-node');
    if (!d) return;
    const path = pathTo(Number(d.dataset.idx));
    state.zoom = path;
    renderFlame();
  }

  function onFlameMove(ev) {
    const tip = $('tooltip');
    const d = ev.target.closest('.fg-node');
    if (!d) { tip.hidden = true; return; }
    const n = drawn[Number(d.dataset.idx)].node;
    tip.textContent = '';
    const b = document.createElement('b');
    b.textContent = n.name;
    tip.appendChild(b);
    tip.appendChild(document.createElement('br'));
    tip.appendChild(document.createTextNode('total ' + fmtValue(n.total) + ' (' + pct(n.total, state.total) + ') · self ' + fmtValue(n.self) + ' (' + pct(n.self, state.total) + ')'));
    tip.hidden = false;
    const x = Math.min(ev.clientX + 12, window.innerWidth - tip.offsetWidth - 8);
    tip.style.left = x + 'px';
    tip.style.top = (ev.clientY + 14) + 'px';
  }

  // ---- top table ----
  function renderTop() {
    const tbody = $('top').querySelector('tbody');
    tbody.textContent = '';
    const rows = state.top.slice();
    const k = state.sortKey, dir = state.sortDir;
    rows.sort((a, b) => {
      if (k === 'name') return dir * a.name.localeCompare(b.name);
      return dir * (a[k] - b[k]) || a.name.localeCompare(b.name);
    });
    for (const th of $('top').querySelectorAll('th.sortable')) {
      th.classList.toggle('sorted', th.dataset.key === k);
      th.classList.toggle('desc', th.dataset.key === k && dir < 0);
      th.classList.toggle('asc', th.dataset.key === k && dir > 0);
    }
    const frag = document.createDocumentFragment();
    if (rows.length === 0) {
      const tr = document.createElement('tr');
      const td = document.createElement('td');
      td.colSpan = 5;
      td.className = 'muted';
      td.textContent = 'No samples yet';
      tr.appendChild(td);
      frag.appendChild(tr);
    }
    for (const r of rows) {
      const tr = document.createElement('tr');
      tr.dataset.name = r.name;
      const cells = [[r.name, 'fn'], [fmtValue(r.self), 'num'], [pct(r.self, state.topTotal), 'num'],
        [fmtValue(r.total), 'num'], [pct(r.total, state.topTotal), 'num']];
      for (const [text, cls] of cells) {
        const td = document.createElement('td');
        td.className = cls;
        td.textContent = text;
        tr.appendChild(td);
      }
      frag.appendChild(tr);
    }
    tbody.appendChild(frag);
    $('topcount').textContent = rows.length ? rows.length + ' functions' : '';
    markTopMatches(searchRegex());
  }

  function markTopMatches(re) {
    for (const tr of $('top').querySelectorAll('tbody tr')) {
      tr.classList.toggle('match', !!(re && tr.dataset.name && re.test(tr.dataset.name)));
    }
  }

  // ---- live updates ----
  function connect() {
    const proto = location.protocol === 'https:' ? 'wss://' : 'ws://';
    let ws;
    try { ws = new WebSocket(proto + location.host + '/ws'); }
    catch (e) { setTimeout(connect, state.wsDelay); return; }
    state.ws = ws;
    ws.onopen = () => { state.wsDelay = 1000; liveStatus(); };
    ws.onmessage = (ev) => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch (e) { return; }
      if (msg.type !== 'profiles' || !state.live || state.range === 'custom') return;
      // Profiles of the selected type, or of a type the selector does not offer yet.
      const types = msg.types || [state.type];
      if (types.some((t) => t === state.type || !state.types.some((x) => x.id === t))) scheduleRefresh(250);
    };
    ws.onclose = () => {
      liveStatus();
      setTimeout(connect, state.wsDelay);
      state.wsDelay = Math.min(state.wsDelay * 2, 15000);
    };
  }

  // ---- wiring ----
  function init() {
    loadHash();
    renderTypes();
    $('range').value = state.range;
    $('group').value = state.group;
    $('search').value = state.search;
    $('custom').hidden = state.range !== 'custom';
    if (state.range === 'custom') {
      $('from').value = localInput(Number(state.from));
      $('until').value = localInput(Number(state.until));
    }
    $('range').addEventListener('change', () => {
      state.range = $('range').value;
      $('custom').hidden = state.range !== 'custom';
      if (state.range === 'custom') {
        const now = Date.now();
        $('from').value = localInput(now - 15 * 60000);
        $('until').value = localInput(now);
        return; // wait for Apply
      }
      saveHash();
      refresh();
    });
    $('apply').addEventListener('click', () => {
      const f = new Date($('from').value).getTime(), u = new Date($('until').value).getTime();
      if (!(f < u)) { setStatus('custom range: "from" must be before "until"', 'down'); return; }
      state.from = String(f);
      state.until = String(u);
      saveHash();
      refresh();
    });
    $('service').addEventListener('change', () => {
      state.service = $('service').value;
      state.process = '';
      state.zoom = [];
      saveHash();
      refresh();
    });
    $('process').addEventListener('change', () => {
      state.process = $('process').value;
      state.zoom = [];
      saveHash();
      refresh();
    });
    $('group').addEventListener('change', () => { state.group = $('group').value; state.zoom = []; saveHash(); refresh(); });
    $('type').addEventListener('change', () => {
      state.type = $('type').value;
      state.zoom = [];
      saveHash();
      refresh();
    });
    $('live').addEventListener('change', () => { state.live = $('live').checked; liveStatus(); if (state.live) refresh(); });
    let searchTimer = null;
    $('search').addEventListener('input', () => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => { state.search = $('search').value; saveHash(); renderFlame(); }, 150);
    });
    $('reset').addEventListener('click', () => { state.zoom = []; renderFlame(); });
    document.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && document.activeElement !== $('search')) { state.zoom = []; renderFlame(); }
    });
    $('flame').addEventListener('click', onFlameClick);
    $('flame').addEventListener('mousemove', onFlameMove);
    $('flame').addEventListener('mouseleave', () => { $('tooltip').hidden = true; });
    for (const th of $('top').querySelectorAll('th.sortable')) {
      th.addEventListener('click', () => {
        const k = th.dataset.key;
        if (state.sortKey === k) state.sortDir = -state.sortDir;
        else { state.sortKey = k; state.sortDir = k === 'name' ? 1 : -1; }
        renderTop();
      });
    }
    $('top').querySelector('tbody').addEventListener('click', (ev) => {
      const tr = ev.target.closest('tr');
      if (!tr || !tr.dataset.name) return;
      state.search = '^' + tr.dataset.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';
      $('search').value = state.search;
      saveHash();
      renderFlame();
    });
    let resizeTimer = null;
    window.addEventListener('resize', () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(renderFlame, 100); });
    // Relative ranges slide even without new profiles.
    setInterval(() => { if (state.live && state.range !== 'custom') refresh(); }, 15000);
    connect();
    refresh();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
