// pronto console: a page per hash route, every datum from the REST API
// with the token the user signed in with (kept in this tab's
// sessionStorage). No framework; text from the API is always set as
// text, never parsed as HTML (the SVG drawings come from the daemon's own
// renderer, which escapes every name).
'use strict';

const POLL_MS = 2000;
let timers = [];
let role = sessionStorage.getItem('pronto-role') || '';

function token() { return sessionStorage.getItem('pronto-token') || ''; }

// h('tag', {attr: value, onclick: fn}, child, ...): an element.
function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) {
    if (k === null || k === undefined || k === false) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

function main(...kids) {
  const m = document.getElementById('main');
  m.replaceChildren(...kids);
  return m;
}

function every(ms, f) {
  f();
  timers.push(setInterval(f, ms));
}

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || ('HTTP ' + status));
    this.status = status;
    this.body = body || {};
  }
}

// Calls the API; JSON answers are parsed, others returned as text.
async function api(method, path, body) {
  const headers = { 'Authorization': 'Bearer ' + token() };
  const init = { method, headers };
  if (body !== undefined) {
    if (typeof body === 'string') {
      init.body = body;
      headers['Content-Type'] = 'text/plain';
    } else {
      init.body = JSON.stringify(body);
      headers['Content-Type'] = 'application/json';
    }
  }
  const r = await fetch(path, init);
  const type = r.headers.get('content-type') || '';
  const data = type.startsWith('application/json') ? await r.json() : await r.text();
  if (r.status === 401 && location.hash !== '#/login') {
    signOut();
    throw new ApiError(401, data);
  }
  if (!r.ok) throw new ApiError(r.status, typeof data === 'object' ? data : { error: data });
  return data;
}

function q(tenant) { return tenant ? '?tenant=' + encodeURIComponent(tenant) : ''; }
function enc(s) { return encodeURIComponent(s); }

function fmtBytes(n) {
  if (n === null || n === undefined) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + ' ' + u[i];
}
function fmtRate(r) {
  if (r === null || r === undefined) return '–';
  if (r >= 1e6) return (r / 1e6).toFixed(2) + ' M';
  if (r >= 1e3) return (r / 1e3).toFixed(1) + ' k';
  return r.toFixed(r < 10 ? 1 : 0);
}
function fmtCount(n) { return Number(n).toLocaleString('en-US'); }

function stateCell(s) { return h('td', { class: 'state-' + s, 'data-field': 'state' }, s); }

// A configuration listing with each diagnostic of `message` (rustc-style:
// `--> FILE:LINE:COL`) shown under its line.
function listing(text, message, line) {
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  const byLine = new Map();
  const loose = [];
  if (message) {
    // One diagnostic per block starting at `error:`/`warning:`.
    const blocks = message.split(/\n(?=(?:error|warning)(?:\[[^\]]*\])?: )/);
    for (const b of blocks) {
      const m = b.match(/-->\s*[^\n]*?:(\d+):(\d+)/);
      const n = m ? Number(m[1]) : line;
      if (n && n >= 1 && n <= lines.length) {
        if (!byLine.has(n)) byLine.set(n, []);
        byLine.get(n).push(b.trim());
      } else {
        loose.push(b.trim());
      }
    }
  }
  const box = h('div', { class: 'listing' });
  for (const l of loose) box.append(h('div', { class: 'diag' }, l));
  lines.forEach((t, i) => {
    const n = i + 1;
    const bad = byLine.has(n);
    box.append(h('div', { class: bad ? 'line bad' : 'line', 'data-line': n },
      h('span', { class: 'no' }, n), t));
    if (bad) {
      for (const d of byLine.get(n)) box.append(h('div', { class: 'diag', 'data-line': n }, d));
    }
  });
  return box;
}

// An error; `short`: its first line only (the listing below shows the rest).
function errorBox(e, short) {
  const m = e.message || String(e);
  return h('div', { class: 'error', role: 'alert' }, short ? m.split('\n')[0] : m);
}

// ---- pages ----------------------------------------------------------

function loginPage() {
  const input = h('input', { type: 'password', id: 'token', autocomplete: 'off', size: 70 });
  const msg = h('div');
  const form = h('form', { class: 'card', id: 'login' },
    h('h1', {}, 'Sign in'),
    h('p', { class: 'muted' }, 'An API token: the admin token (admin.token in the daemon\'s state directory) or a tenant\'s (pronto tenant create).'),
    h('label', { for: 'token' }, 'Token'), input, ' ',
    h('button', { type: 'submit' }, 'Sign in'), msg);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    sessionStorage.setItem('pronto-token', input.value.trim());
    try {
      await api('GET', '/v1/health');
      try {
        await api('GET', '/v1/tenants');
        role = 'admin';
      } catch (e) {
        if (e.status !== 403) throw e;
        role = 'tenant';
      }
      sessionStorage.setItem('pronto-role', role);
      location.hash = '#/instances';
    } catch (e) {
      sessionStorage.removeItem('pronto-token');
      msg.replaceChildren(errorBox(e));
    }
  });
  main(form);
  input.focus();
}

function signOut() {
  sessionStorage.removeItem('pronto-token');
  sessionStorage.removeItem('pronto-role');
  role = '';
  location.hash = '#/login';
}

async function instancesPage() {
  const body = h('tbody');
  const note = h('p', { class: 'muted' }, 'Rates: packets per second through the instance\'s switch ports, from two polls ' + POLL_MS / 1000 + ' s apart.');
  main(h('h1', {}, 'Instances'),
    h('table', { id: 'instances' },
      h('thead', {}, h('tr', {},
        h('th', {}, 'name'), h('th', {}, 'tenant'), h('th', {}, 'state'),
        h('th', { class: 'num' }, 'boot'), h('th', { class: 'num' }, 'memory (PSS)'),
        h('th', { class: 'num' }, 'limit'), h('th', { class: 'num' }, 'rx pkt/s'),
        h('th', { class: 'num' }, 'tx pkt/s'), h('th', { class: 'num' }, 'restarts'))),
      body),
    note);
  let last = null;
  every(POLL_MS, async () => {
    try {
      const [list, ports] = await Promise.all([
        api('GET', '/v1/instances'),
        api('GET', '/v1/switch/ports').catch(() => []),
      ]);
      const now = performance.now();
      const byPort = new Map(ports.map((p) => [p.port, p]));
      const shown = await Promise.all(list.map((i) =>
        api('GET', '/v1/instances/' + enc(i.name) + q(i.tenant)).catch(() => i)));
      const counts = new Map();
      for (const i of shown) {
        let rx = 0, tx = 0;
        for (const f of i.interfaces || []) {
          const p = byPort.get(f.port);
          // The switch's rx is what the instance sent, its tx what it got.
          if (p) { rx += p.tx_packets; tx += p.rx_packets; }
        }
        counts.set(i.tenant + '/' + i.name, [rx, tx]);
      }
      const rows = shown.map((i) => {
        const key = i.tenant + '/' + i.name;
        let rates = [null, null];
        if (last && last.counts.has(key)) {
          const dt = (now - last.t) / 1000;
          const a = last.counts.get(key), b = counts.get(key);
          rates = [(b[0] - a[0]) / dt, (b[1] - a[1]) / dt];
        }
        return h('tr', { 'data-instance': i.name, 'data-tenant': i.tenant },
          h('td', {}, h('a', { href: '#/instance/' + enc(i.tenant) + '/' + enc(i.name) }, i.name)),
          h('td', {}, i.tenant), stateCell(i.state),
          h('td', { class: 'num' }, i.boot_ms == null ? '–' : i.boot_ms.toFixed(1) + ' ms'),
          h('td', { class: 'num' }, fmtBytes(i.pss_bytes)),
          h('td', { class: 'num' }, fmtBytes(i.memory)),
          h('td', { class: 'num' }, fmtRate(rates[0])),
          h('td', { class: 'num' }, fmtRate(rates[1])),
          h('td', { class: 'num' }, i.restarts));
      });
      if (!rows.length) rows.push(h('tr', {}, h('td', { colspan: 9, class: 'muted' }, 'No instances yet: create one.')));
      body.replaceChildren(...rows);
      last = { t: now, counts };
    } catch (e) {
      body.replaceChildren(h('tr', {}, h('td', { colspan: 9 }, errorBox(e))));
    }
  });
}

async function tenantsPage() {
  const body = h('tbody');
  const msg = h('div');
  const name = h('input', { type: 'text', id: 'tenant-name', placeholder: 'acme' });
  const form = h('form', { class: 'card', id: 'tenant-form' },
    h('h2', {}, 'New tenant'), h('div', { class: 'row' },
      h('div', {}, h('label', { for: 'tenant-name' }, 'Name'), name),
      h('button', { type: 'submit' }, 'Create')), msg);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const t = await api('POST', '/v1/tenants', { name: name.value.trim() });
      msg.replaceChildren(h('p', { class: 'ok' }, 'Tenant ', t.name, ' created. Its token (shown once): ',
        h('span', { class: 'token', id: 'new-token' }, t.token)));
      load();
    } catch (e) { msg.replaceChildren(errorBox(e)); }
  });
  main(h('h1', {}, 'Tenants'),
    h('table', { id: 'tenants' }, h('thead', {}, h('tr', {},
      h('th', {}, 'tenant'), h('th', { class: 'num' }, 'instances'),
      h('th', { class: 'num' }, 'memory used / quota'), h('th', { class: 'num' }, 'instances quota'))), body),
    form);
  async function load() {
    try {
      const list = await api('GET', '/v1/tenants');
      const rows = await Promise.all(list.map(async (t) => {
        const qv = await api('GET', '/v1/tenants/' + enc(t.name) + '/quota').catch(() => null);
        const quota = (qv && qv.quota) || {}, usage = (qv && qv.usage) || {};
        return h('tr', { 'data-tenant': t.name }, h('td', {}, t.name),
          h('td', { class: 'num' }, t.instances),
          h('td', { class: 'num' }, fmtBytes(usage.memory) + ' / ' + fmtBytes(quota.memory)),
          h('td', { class: 'num' }, quota.instances == null ? '–' : quota.instances));
      }));
      body.replaceChildren(...rows);
    } catch (e) { body.replaceChildren(h('tr', {}, h('td', { colspan: 4 }, errorBox(e)))); }
  }
  load();
}

async function createPage() {
  const name = h('input', { type: 'text', id: 'name', placeholder: 'fw1' });
  const memory = h('input', { type: 'text', id: 'memory', placeholder: '64M (optional)' });
  const config = h('textarea', { id: 'config', spellcheck: 'false' },
    'src :: InfiniteSource(LIMIT 1000, STOP false)\n  -> c :: Counter\n  -> Discard;\n');
  const tenant = h('select', { id: 'tenant' });
  const msg = h('div', { id: 'create-error' });
  const form = h('form', { class: 'card', id: 'create-form' },
    h('h1', {}, 'Create an instance'),
    h('div', { class: 'row' },
      h('div', {}, h('label', { for: 'name' }, 'Name'), name),
      role === 'admin' ? h('div', {}, h('label', { for: 'tenant' }, 'Tenant'), tenant) : null,
      h('div', {}, h('label', { for: 'memory' }, 'Memory limit'), memory)),
    h('label', { for: 'config' }, 'Configuration (Click language)'), config,
    h('p', {}, h('button', { type: 'submit', id: 'create' }, 'Create')), msg);
  main(form);
  if (role === 'admin') {
    try {
      for (const t of await api('GET', '/v1/tenants')) tenant.append(h('option', { value: t.name }, t.name));
      tenant.value = 'default';
    } catch (e) { msg.replaceChildren(errorBox(e)); }
  }
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { name: name.value.trim(), config: config.value };
    if (role === 'admin' && tenant.value) body.tenant = tenant.value;
    if (memory.value.trim()) body.memory = memory.value.trim();
    msg.replaceChildren(h('p', { class: 'muted' }, 'Starting…'));
    try {
      const v = await api('POST', '/v1/instances', body);
      location.hash = '#/instance/' + enc(v.tenant) + '/' + enc(v.name);
    } catch (e) {
      const shown = e.body.field === 'config';
      msg.replaceChildren(errorBox(e, shown));
      if (shown) msg.append(listing(config.value, e.message));
    }
  });
}

async function instancePage(tenant, name) {
  const base = '/v1/instances/' + enc(name);
  const head = h('div');
  const graph = h('div', { class: 'graph', id: 'graph' }, h('p', { class: 'muted' }, 'Drawing…'));
  const counterNote = h('p', { class: 'muted', id: 'counter-note' });
  const handlersBox = h('div', { id: 'handlers' }, h('p', { class: 'muted' }, 'Click an element in the graph to list its handlers.'));
  const hname = h('input', { type: 'text', id: 'handler', placeholder: 'c.count' });
  const hvalue = h('input', { type: 'text', id: 'handler-value', placeholder: 'value to write' });
  const hout = h('div', { id: 'handler-out' });
  const configBox = h('div');
  const reconf = h('textarea', { id: 'reconfig', spellcheck: 'false' });
  const reconfMsg = h('div', { id: 'reconfig-error' });
  const reform = h('form', { class: 'card', id: 'reconfig-form' },
    h('h2', {}, 'Reconfigure'),
    h('p', { class: 'muted' }, 'The new configuration is built in a sandbox of its own first; the running one is replaced only if it builds (its state handed over).'),
    reconf, h('p', {}, h('button', { type: 'submit', id: 'reconfigure' }, 'Reconfigure')), reconfMsg);
  main(h('h1', {}, 'Instance ', h('span', { id: 'instance-name' }, name), h('span', { class: 'muted' }, ' (tenant ' + tenant + ')')),
    head,
    h('h2', {}, 'Element graph'), counterNote, graph,
    h('h2', {}, 'Handlers'),
    h('form', { class: 'card', id: 'handler-form' }, h('div', { class: 'row' },
      h('div', {}, h('label', { for: 'handler' }, 'Handler'), hname),
      h('div', {}, h('label', { for: 'handler-value' }, 'Value'), hvalue),
      h('button', { type: 'button', id: 'handler-read', onclick: () => rw('GET') }, 'Read'),
      h('button', { type: 'button', id: 'handler-write', class: 'secondary', onclick: () => rw('PUT') }, 'Write')),
      hout),
    handlersBox,
    h('h2', {}, 'Configuration'), configBox, reform,
    h('p', {}, h('button', { type: 'button', class: 'danger', id: 'remove', onclick: remove }, 'Remove instance')));

  async function rw(method, handler, value) {
    handler = handler || hname.value.trim();
    try {
      const path = base + '/handlers/' + enc(handler) + q(tenant);
      if (method === 'GET') {
        const v = await api('GET', path);
        hout.replaceChildren(h('pre', { 'data-handler': handler }, v === '' ? '(empty)' : v));
        return v;
      }
      await api('PUT', path, value === undefined ? hvalue.value : value);
      hout.replaceChildren(h('p', { class: 'ok' }, 'Wrote ' + handler + '.'));
    } catch (e) { hout.replaceChildren(errorBox(e)); }
  }
  async function remove() {
    if (!confirm('Remove ' + name + '?')) return;
    try { await api('DELETE', base + q(tenant)); location.hash = '#/instances'; } catch (e) { head.append(errorBox(e)); }
  }
  async function showHandlers(el) {
    for (const n of graph.querySelectorAll('.node.selected')) n.classList.remove('selected');
    const node = graph.querySelector('.node[data-element="' + CSS.escape(el) + '"]');
    if (node) node.classList.add('selected');
    try {
      const list = await api('GET', base + '/handlers/' + enc(el + '.handlers') + q(tenant));
      const rows = list.split('\n').filter((l) => l.trim()).map((l) => {
        const [hn, mode] = l.trim().split(/\s+/);
        const full = el + '.' + hn;
        const out = h('td', {});
        return h('tr', {}, h('td', {}, full), h('td', {}, mode || ''),
          h('td', {}, (mode || '').includes('r') ? h('button', { type: 'button', class: 'secondary', onclick: async () => {
            const v = await rw('GET', full);
            out.replaceChildren(h('pre', {}, v == null ? '' : v));
          } }, 'read') : null,
          (mode || '').includes('w') ? h('button', { type: 'button', class: 'secondary', onclick: () => { hname.value = full; hvalue.focus(); } }, 'write…') : null),
          out);
      });
      handlersBox.replaceChildren(h('table', { class: 'handlers' }, h('thead', {}, h('tr', {},
        h('th', {}, 'handler'), h('th', {}, 'mode'), h('th', {}, ''), h('th', {}, 'value'))), h('tbody', {}, rows)));
    } catch (e) { handlersBox.replaceChildren(errorBox(e)); }
  }

  let config = null;
  async function loadHead() {
    try {
      const v = await api('GET', base + q(tenant));
      head.replaceChildren(h('table', { id: 'instance-facts' }, h('tbody', {},
        h('tr', {}, h('th', {}, 'state'), stateCell(v.state)),
        h('tr', {}, h('th', {}, 'boot'), h('td', {}, v.boot_ms == null ? '–' : v.boot_ms.toFixed(1) + ' ms')),
        h('tr', {}, h('th', {}, 'memory (PSS / limit)'), h('td', {}, fmtBytes(v.pss_bytes) + ' / ' + fmtBytes(v.memory))),
        h('tr', {}, h('th', {}, 'restarts'), h('td', {}, v.restarts)),
        h('tr', {}, h('th', {}, 'interfaces'), h('td', {}, (v.interfaces || []).map((f) => f.name + (f.port != null ? ' (port ' + f.port + ')' : '')).join(', ') || '–')),
        v.error ? h('tr', {}, h('th', {}, 'error'), h('td', {}, h('span', { class: 'error' }, v.error))) : null)));
      if (config !== v.config) {
        config = v.config;
        configBox.replaceChildren(listing(config));
        if (!reconf.value) reconf.value = config;
      }
    } catch (e) { head.replaceChildren(errorBox(e)); }
  }
  async function loadGraph() {
    try {
      const svg = await api('GET', base + '/graph.svg' + q(tenant));
      // The daemon's own drawing (every name escaped by its renderer).
      graph.innerHTML = svg;
      for (const n of graph.querySelectorAll('.node')) {
        n.addEventListener('click', () => showHandlers(n.getAttribute('data-element')));
      }
      pollCounters();
    } catch (e) { graph.replaceChildren(errorBox(e)); }
  }
  let counters = true;
  async function pollCounters() {
    if (!counters) return;
    try {
      const c = await api('GET', base + '/counters' + q(tenant));
      for (const el of c.elements || []) {
        (el.outputs || []).forEach((n, port) => {
          const sel = '.edge[data-from="' + CSS.escape(el.name) + '"][data-port="' + port + '"] .edge-label';
          for (const t of graph.querySelectorAll(sel)) t.textContent = fmtCount(n);
        });
        const drops = Object.values(el.drops || {}).reduce((a, b) => a + Number(b), 0);
        const label = graph.querySelector('.node-label[data-element="' + CSS.escape(el.name) + '"]');
        if (label) {
          label.textContent = drops ? fmtCount(drops) + ' drops' : '';
          label.classList.toggle('drops', drops > 0);
        }
      }
      counterNote.textContent = 'Packets per connection and drops per element, live (every ' + POLL_MS / 1000 + ' s).';
    } catch (e) {
      if (e.status === 404) {
        counters = false;
        counterNote.textContent = 'This daemon gives no live counters: the graph is shown without them.';
      } else {
        counterNote.textContent = 'Counters: ' + e.message;
      }
    }
  }
  reform.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    reconfMsg.replaceChildren(h('p', { class: 'muted' }, 'Building…'));
    try {
      await api('PUT', base + '/config' + q(tenant), { config: reconf.value });
      reconfMsg.replaceChildren(h('p', { class: 'ok' }, 'Reconfigured.'));
      config = null;
      await loadHead();
      loadGraph();
    } catch (e) {
      const shown = e.body.field === 'config';
      reconfMsg.replaceChildren(errorBox(e, shown));
      if (shown) reconfMsg.append(listing(reconf.value, e.message));
    }
  });
  await loadHead();
  await loadGraph();
  timers.push(setInterval(() => { loadHead(); pollCounters(); }, POLL_MS));
}

async function portsPage() {
  const body = h('tbody');
  main(h('h1', {}, 'Switch ports'), h('table', { id: 'ports' }, h('thead', {}, h('tr', {},
    h('th', { class: 'num' }, 'port'), h('th', {}, 'name'), h('th', { class: 'num' }, 'weight'),
    h('th', { class: 'num' }, 'rx packets'), h('th', { class: 'num' }, 'tx packets'),
    h('th', { class: 'num' }, 'rx pkt/s'), h('th', { class: 'num' }, 'tx pkt/s'),
    h('th', { class: 'num' }, 'drops'))), body));
  let last = null;
  every(POLL_MS, async () => {
    try {
      const ports = await api('GET', '/v1/switch/ports');
      const now = performance.now();
      const rows = ports.map((p) => {
        const a = last && last.ports.get(p.port);
        const dt = last ? (now - last.t) / 1000 : 0;
        return h('tr', { 'data-port': p.port }, h('td', { class: 'num' }, p.port), h('td', {}, p.name),
          h('td', { class: 'num' }, p.weight == null ? '–' : p.weight),
          h('td', { class: 'num' }, fmtCount(p.rx_packets)), h('td', { class: 'num' }, fmtCount(p.tx_packets)),
          h('td', { class: 'num' }, a ? fmtRate((p.rx_packets - a.rx_packets) / dt) : '–'),
          h('td', { class: 'num' }, a ? fmtRate((p.tx_packets - a.tx_packets) / dt) : '–'),
          h('td', { class: 'num', title: JSON.stringify(p.drops_by_reason || {}) }, fmtCount(p.drops)));
      });
      if (!rows.length) rows.push(h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No ports attached.')));
      body.replaceChildren(...rows);
      last = { t: now, ports: new Map(ports.map((p) => [p.port, p])) };
    } catch (e) { body.replaceChildren(h('tr', {}, h('td', { colspan: 8 }, errorBox(e)))); }
  });
}

const SAMPLE_POLICY = 'nf vpn = builtin(vpn)\nnf monitor = builtin(monitor)\nnf fw = builtin(firewall)\nnf lb = builtin(lb)\nposition(vpn, first)\norder(fw, before, lb)\norder(monitor, before, lb)\n';

function chainsPage() {
  const policy = h('textarea', { id: 'policy', spellcheck: 'false' }, SAMPLE_POLICY);
  const files = h('div', { class: 'files', id: 'files' });
  const out = h('div', { id: 'plan' });
  function addFile() {
    const n = h('input', { type: 'text', class: 'file-name', placeholder: 'fw.click' });
    const t = h('textarea', { class: 'file-text', spellcheck: 'false', style: 'min-height:6em' });
    const box = h('div', { class: 'file' }, h('label', {}, 'click("…") file'), n, ' ',
      h('button', { type: 'button', class: 'secondary', onclick: () => box.remove() }, 'remove'), t);
    files.append(box);
  }
  const form = h('form', { class: 'card', id: 'plan-form' },
    h('h1', {}, 'Chains'),
    h('p', { class: 'muted' }, 'An NFP policy (order, priority, position) compiled into its parallel service graph. NFs may be builtin(...), opaque(...), instance("NAME") (your instances) or click("FILE") with the file given below.'),
    h('label', { for: 'policy' }, 'Policy (.nfp)'), policy, files,
    h('p', {}, h('button', { type: 'button', class: 'secondary', onclick: addFile }, 'Add a Click file'), ' ',
      h('button', { type: 'submit', id: 'compile' }, 'Compile')), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = {};
    for (const box of files.querySelectorAll('.file')) {
      const n = box.querySelector('.file-name').value.trim();
      if (n) f[n] = box.querySelector('.file-text').value;
    }
    try {
      const plan = await api('POST', '/v1/chains/plan', { policy: policy.value, files: f });
      const g = h('div', { class: 'graph', id: 'plan-graph' });
      g.innerHTML = plan.svg; // the daemon's own drawing
      out.replaceChildren(h('h2', {}, 'Service graph (' + plan.depth + ' stages deep)'), g,
        h('h2', {}, 'Plan'), h('pre', { id: 'plan-text' }, plan.text));
    } catch (e) {
      const shown = e.body.field === 'policy';
      out.replaceChildren(errorBox(e, shown));
      if (shown) out.append(listing(policy.value, e.message, e.body.line));
    }
  });
  main(form);
}

// ---- routing ----------------------------------------------------------

async function route() {
  for (const t of timers) clearInterval(t);
  timers = [];
  const hash = location.hash || '#/instances';
  const parts = hash.slice(2).split('/').map(decodeURIComponent);
  document.body.className = token() ? role : 'anon';
  document.getElementById('who').textContent = role ? 'signed in as ' + role : '';
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.page === parts[0]);
  if (!token() && parts[0] !== 'login') { location.hash = '#/login'; return; }
  try {
    switch (parts[0]) {
      case 'login': return loginPage();
      case 'tenants': return await tenantsPage();
      case 'create': return await createPage();
      case 'instance': return await instancePage(parts[1], parts.slice(2).join('/'));
      case 'ports': return await portsPage();
      case 'chains': return chainsPage();
      default: return await instancesPage();
    }
  } catch (e) { main(errorBox(e)); }
}

document.getElementById('logout').addEventListener('click', signOut);
window.addEventListener('hashchange', route);
route();
