// weir's web UI: an overview of the cluster and a page per job, drawn from
// the JobManager's REST API (docs/rest-api.md) and refreshed every
// REFRESH_MS without reloading. The page is split into sections; a refresh
// rewrites only the sections whose content changed, so what the user is
// about to click stays put.
'use strict';

const REFRESH_MS = 2000;

const ui = {
  route: null,         // {page: 'overview'} or {page: 'job', id}
  timer: null,
  sections: new Map(), // section id -> the HTML it shows
  vertex: null,        // the job page's selected vertex id
  confirm: null,       // 'stop' | 'cancel' while asking
  notice: null,        // {text, error} after an action
  acting: false,       // an action's request is in flight
  job: null,           // the job page's last JOB
  generation: 0,       // of refreshes: only the latest one renders
};

// ---- talking to the JobManager ---------------------------------------------

async function api(method, path, body) {
  const init = { method, headers: { 'X-Weir-UI': '1' }, credentials: 'same-origin' };
  if (method !== 'GET') {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body || {});
  }
  const res = await fetch(path, init);
  if (res.status === 401) {
    window.location.href = '/ui/login';
    throw new Error('the session ended; sign in again');
  }
  const text = await res.text();
  let data;
  try {
    data = JSON.parse(text);
  } catch (e) {
    data = { error: text };
  }
  if (!res.ok) throw new Error(data.error || 'HTTP ' + res.status);
  return data;
}

// ---- formatting --------------------------------------------------------------

function esc(v) {
  return String(v).replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}
function num(v) {
  return v === null || v === undefined ? '—' : Math.round(v).toLocaleString('en-US');
}
function bytes(v) {
  if (v === null || v === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; ++i; }
  return (i === 0 ? v : v.toFixed(v < 10 ? 2 : 1)) + ' ' + units[i];
}
function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return Math.round(ms) + ' ms';
  let s = Math.floor(ms / 1000);
  if (s < 60) return (ms / 1000).toFixed(1) + ' s';
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  s %= 60;
  const two = n => String(n).padStart(2, '0');
  return h > 0 ? `${h}h ${two(m)}m ${two(s)}s` : `${m}m ${two(s)}s`;
}
function time(ms) {
  if (!ms) return '—';
  const d = new Date(ms), now = new Date();
  const t = d.toLocaleTimeString('en-GB');
  return d.toDateString() === now.toDateString() ? t : d.toISOString().slice(0, 10) + ' ' + t;
}
function watermark(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms >= 9e18) return '+∞ (end of input)';
  const d = new Date(ms);
  return isNaN(d.getTime()) ? String(ms) : d.toISOString().replace('T', ' ').replace('Z', '');
}
function status(s) {
  return `<span class="status ${esc(s)}">${esc(s)}</span>`;
}
function metric(m, key) {
  return m ? m[key] : null;
}
// busy / backpressured / idle of a second, as Flink colours them.
function timebar(m) {
  if (!m || m.busy_ms_per_s === undefined) return '<span class="muted">—</span>';
  const parts = [['busy', m.busy_ms_per_s], ['backpressured', m.backpressured_ms_per_s], ['idle', m.idle_ms_per_s]];
  const total = Math.max(1000, parts.reduce((a, p) => a + p[1], 0));
  const title = parts.map(p => `${p[0]} ${Math.round(p[1])} ms/s`).join(', ');
  return `<div class="timebar" title="${esc(title)}">` +
    parts.map(p => `<span class="${p[0]}" style="width:${(100 * p[1] / total).toFixed(1)}%"></span>`).join('') + '</div>';
}

// ---- sections ----------------------------------------------------------------

function app() {
  return document.getElementById('app');
}
// Lays out a page: its sections, empty until filled.
function layout(html) {
  ui.sections.clear();
  app().innerHTML = html;
}
function fill(id, html) {
  if (ui.sections.get(id) === html) return;
  const el = document.getElementById(id);
  if (!el) return;
  el.innerHTML = html;
  ui.sections.set(id, html);
}
function banner(text, info) {
  const b = document.getElementById('banner');
  b.textContent = text || '';
  b.classList.toggle('hidden', !text);
  b.classList.toggle('info', !!info);
}

// ---- overview ------------------------------------------------------------------

function overviewLayout() {
  document.title = 'weir: overview';
  layout(`<h1>Cluster overview</h1>
    <div id="s-cards"></div>
    <h2>TaskManagers</h2><div id="s-taskmanagers"></div>
    <h2>Jobs</h2><div id="s-jobs"></div>`);
}

async function overviewLoad() {
  const [o, j] = await Promise.all([api('GET', '/v1/overview'), api('GET', '/v1/jobs')]);
  return () => overviewRender(o, j);
}

function overviewRender(o, j) {
  fill('s-cards', `<div class="cards">
      <div class="card"><div class="n" id="taskmanager-count">${o.taskmanagers.length}</div><div class="l">TaskManagers</div></div>
      <div class="card"><div class="n">${o.slots_free} / ${o.slots_total}</div><div class="l">Slots free</div></div>
      <div class="card"><div class="n">${o.jobs_running}</div><div class="l">Running jobs</div></div>
      <div class="card"><div class="n">${j.jobs.length}</div><div class="l">Jobs in all</div></div></div>`);
  const tms = o.taskmanagers.map(t => `<tr data-taskmanager="${esc(t.id)}">
      <td><a href="#/taskmanagers/${encodeURIComponent(t.id)}">${esc(t.id)}</a></td><td class="mono">${esc(t.data_address)}</td>
      <td class="mono">${t.metrics_address ? esc(t.metrics_address) + '/metrics' : '—'}</td>
      <td class="num">${t.slots_used} / ${t.slots}</td>
      <td class="num">${t.rss_bytes ? bytes(t.rss_bytes) : '—'}</td>
      <td class="num">${num(t.network_buffers_used)} / ${num(t.network_buffers)}</td>
      <td class="num">${num(t.last_heartbeat_ms_ago)} ms ago</td></tr>`).join('');
  fill('s-taskmanagers', o.taskmanagers.length === 0
    ? '<p class="muted">No TaskManager registered: start one with <code>weir taskmanager --jobmanager HOST:PORT</code>.</p>'
    : `<table><thead><tr><th>ID</th><th>Data address</th><th>Metrics</th><th class="num">Slots used</th>
       <th class="num">Memory (RSS)</th><th class="num">Network buffers used</th><th class="num">Last heartbeat</th></tr></thead>
       <tbody>${tms}</tbody></table>`);
  const now = Date.now();
  const jobs = j.jobs.slice().reverse().map(job => `<tr data-job="${esc(job.job_id)}">
      <td><a href="#/jobs/${esc(job.job_id)}">${esc(job.name)}</a></td><td class="mono">${esc(job.job_id)}</td>
      <td>${status(job.status)}</td><td>${time(job.start_time_ms)}</td>
      <td class="num">${duration(job.duration_ms !== undefined ? job.duration_ms : now - job.start_time_ms)}</td>
      <td class="num">${num(job.restarts)}</td><td class="num">${num(job.completed_checkpoints)}</td></tr>`).join('');
  fill('s-jobs', j.jobs.length === 0
    ? '<p class="muted">No jobs yet: submit one with <code>weir run</code>.</p>'
    : `<table><thead><tr><th>Name</th><th>Job ID</th><th>Status</th><th>Started</th><th class="num">Duration</th>
       <th class="num">Restarts</th><th class="num">Checkpoints</th></tr></thead><tbody>${jobs}</tbody></table>`);
}

// ---- a job ---------------------------------------------------------------------

function jobLayout(id) {
  document.title = 'weir: job ' + id;
  ui.vertex = null;
  ui.confirm = null;
  ui.notice = null;
  ui.job = null;
  ui.checkpoint = null;
  ui.cps = null;
  layout(`<div id="s-head"><p class="muted">Loading job ${esc(id)}…</p></div>
    <h2>Job graph</h2><div id="s-graph"></div>
    <h2>Vertices</h2><div id="s-vertices"></div>
    <h2 id="s-subtasks-title">Subtasks</h2><div id="s-subtasks"></div>
    <h2>Checkpoints</h2><div id="s-checkpoints"></div><div id="s-checkpoint-detail"></div>
    <h2>Exceptions</h2><div id="s-exceptions"></div>
    <h2>Configuration</h2><div id="s-job-config"></div>`);
}

async function jobLoad(id) {
  const [job, cps] = await Promise.all([api('GET', '/v1/jobs/' + id), api('GET', '/v1/jobs/' + id + '/checkpoints')]);
  return () => jobRender(job, cps);
}

function jobRender(job, cps) {
  ui.job = job;
  if (ui.vertex === null || !job.vertices.some(v => v.id === ui.vertex)) ui.vertex = job.vertices.length ? job.vertices[0].id : null;
  document.title = 'weir: ' + job.name;
  fillJobHead(job);
  fill('s-graph', graph(job));
  fillVertices(job);
  fillSubtasks(job);
  ui.cps = cps;
  fillCheckpoints(cps);
  fillCheckpointDetail(job, cps);
  fillExceptions(job);
  fillJobConfig(job);
}

// What the job was submitted with: its name, library and arguments (the
// job's own and weir's job flags: parallelism, checkpointing, state).
function fillJobConfig(job) {
  const args = job.args || [];
  fill('s-job-config', `<table id="job-config"><tbody>
    <tr><td>Job</td><td class="mono">${esc(job.name)}</td></tr>
    <tr><td>Library</td><td class="mono">${job.library ? esc(job.library) : '(built in)'}</td></tr>
    <tr><td>Arguments</td><td class="mono" id="job-args">${args.length ? args.map(esc).join(' ') : '(none)'}</td></tr>
    <tr><td>Max parallelism</td><td class="mono">${num(job.max_parallelism)}</td></tr></tbody></table>`);
}

function fillJobHead(job) {
  const running = job.status === 'RUNNING' || job.status === 'RESTARTING' || job.status === 'CREATED';
  const now = Date.now();
  const facts = [
    `Started ${time(job.start_time_ms)}`,
    job.duration_ms !== undefined ? `ran ${duration(job.duration_ms)}` : `running for ${duration(now - job.start_time_ms)}`,
    job.attempt !== undefined ? `attempt ${job.attempt}` : null,
    `${num(job.restarts)} restarts`,
    `${num(job.completed_checkpoints)} checkpoints`,
    `max parallelism ${job.max_parallelism}`,
  ].filter(Boolean).join(' · ');
  let html = `<div class="job-head"><div><h1 id="job-name">${esc(job.name)} ${status(job.status)}</h1>
      <div class="sub"><span class="mono">${esc(job.job_id)}</span> · ${esc(facts)}</div>`;
  if (job.stopped_with_savepoint) html += `<div class="sub">Stopped with savepoint <code>${esc(job.stopped_with_savepoint)}</code></div>`;
  if (job.waiting_for_slots) html += `<div class="notice">Waiting for slots: ${esc(job.waiting_for_slots)}</div>`;
  html += '</div>';
  if (running) {
    const off = ui.acting ? ' disabled' : '';
    html += `<div class="actions">
        <button type="button" class="secondary" data-action="savepoint" id="action-savepoint"${off}>Trigger savepoint</button>
        <button type="button" class="secondary" data-action="ask-stop" id="action-stop"${off}>Stop with savepoint</button>
        <button type="button" class="danger" data-action="ask-cancel" id="action-cancel"${off}>Cancel job</button></div>`;
  }
  html += '</div>';
  if (running && ui.confirm === 'stop') {
    html += `<div class="confirm" id="confirm">Stop <b>${esc(job.name)}</b>? A savepoint is taken, then the job ends.
        <button type="button" data-action="do-stop" id="confirm-yes">Stop with savepoint</button>
        <button type="button" class="secondary" data-action="no" id="confirm-no">Keep running</button></div>`;
  } else if (running && ui.confirm === 'cancel') {
    html += `<div class="confirm" id="confirm">Cancel <b>${esc(job.name)}</b>? It ends now, without a savepoint.
        <button type="button" class="danger" data-action="do-cancel" id="confirm-yes">Cancel job</button>
        <button type="button" class="secondary" data-action="no" id="confirm-no">Keep running</button></div>`;
  }
  if (ui.notice) html += `<div class="notice${ui.notice.error ? ' error' : ''}" id="notice">${esc(ui.notice.text)}</div>`;
  fill('s-head', html);
}

// The job graph: vertices in columns by their distance from the sources,
// edges labelled with their partitioning; an iteration's feedback edge
// (which leads back to an earlier column) arcs below the graph.
function graph(job) {
  if (job.vertices.length === 0) return '<p class="muted">No job graph: this JobManager could not build the job (see its failure below).</p>';
  const W = 270, GAP_X = 100, GAP_Y = 26, PAD = 16, LINE = 16;
  // A vertex's name is its chained operators: one per line, each cut to
  // the box (the whole name in its tooltip and in the vertex's detail).
  const nameLines = v => {
    const ops = v.name.split(' -> ').map(op => op.length > 38 ? op.slice(0, 37) + '…' : op);
    return ops.length <= 5 ? ops : ops.slice(0, 4).concat([`… ${ops.length - 4} more`]);
  };
  const H = new Map(job.vertices.map(v => [v.id, 92 + LINE * (nameLines(v).length - 1)]));
  const depth = new Map(job.vertices.map(v => [v.id, 0]));
  for (let round = 0; round < job.vertices.length; ++round) {
    for (const e of job.edges) {
      if (!e.feedback) depth.set(e.target, Math.max(depth.get(e.target), depth.get(e.source) + 1));
    }
  }
  const columns = [];
  for (const v of job.vertices) (columns[depth.get(v.id)] = columns[depth.get(v.id)] || []).push(v);
  const columnHeight = col => col.reduce((sum, v) => sum + H.get(v.id), 0) + (col.length - 1) * GAP_Y;
  const ARC = job.edges.some(e => e.feedback) ? 48 : 0;  // room for feedback arcs
  const height = PAD * 2 + ARC + Math.max(...columns.map(columnHeight));
  const width = PAD * 2 + columns.length * W + (columns.length - 1) * GAP_X;
  const pos = new Map();
  columns.forEach((col, i) => {
    let y = (height - ARC - columnHeight(col)) / 2;
    for (const v of col) {
      pos.set(v.id, { x: PAD + i * (W + GAP_X), y });
      y += H.get(v.id) + GAP_Y;
    }
  });
  let svg = `<svg width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="job graph">
    <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto">
    <path d="M0,0 L10,5 L0,10 z" fill="#8a96a3"/></marker></defs>`;
  for (const e of job.edges) {
    const a = pos.get(e.source), b = pos.get(e.target);
    if (e.feedback) {
      // From the bottom of the source round under the graph to the bottom of the head.
      const x1 = a.x + W / 2, y1 = a.y + H.get(e.source), x2 = b.x + W / 2 + 24, y2 = b.y + H.get(e.target);
      const low = height - PAD / 2;
      svg += `<g class="edge feedback" data-source="${e.source}" data-target="${e.target}">
        <path d="M${x1},${y1} C${x1},${low} ${x2},${low} ${x2},${y2}" marker-end="url(#arrow)"/>
        <text x="${(x1 + x2) / 2}" y="${low - 4}" text-anchor="middle">${esc('feedback · ' + e.partitioning)}</text></g>`;
      continue;
    }
    const x1 = a.x + W, y1 = a.y + H.get(e.source) / 2, x2 = b.x, y2 = b.y + H.get(e.target) / 2, mx = (x1 + x2) / 2;
    const label = e.partitioning + (e.exchange !== 'pipelined' ? ' · ' + e.exchange : '');
    svg += `<g class="edge" data-source="${e.source}" data-target="${e.target}">
      <path d="M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}" marker-end="url(#arrow)"/>
      <text x="${mx}" y="${(y1 + y2) / 2 - 6}" text-anchor="middle">${esc(label)}</text></g>`;
  }
  for (const v of job.vertices) {
    const p = pos.get(v.id), h = H.get(v.id), m = v.state === 'RUNNING' ? v.metrics : null;
    const lines = nameLines(v), below = p.y + 20 + LINE * lines.length;
    const line2 = `Parallelism ${v.parallelism} · ${v.state}`;
    const line3 = m ? `in ${num(m.records_in_per_s)}/s · out ${num(m.records_out_per_s)}/s`
      : v.metrics ? `${num(v.metrics.records_in)} in · ${num(v.metrics.records_out)} out` : 'no metrics yet';
    let bar = '';
    if (m && m.busy_ms_per_s !== undefined) {
      const parts = [['busy', m.busy_ms_per_s], ['backpressured', m.backpressured_ms_per_s], ['idle', m.idle_ms_per_s]];
      const total = Math.max(1000, parts.reduce((s, q) => s + q[1], 0));
      let x = p.x + 10;
      for (const [cls, ms] of parts) {
        const w = (W - 20) * ms / total;
        bar += `<rect class="${cls}" x="${x}" y="${p.y + h - 16}" width="${w}" height="7"><title>${cls} ${Math.round(ms)} ms/s</title></rect>`;
        x += w;
      }
    }
    svg += `<g class="vertex${v.id === ui.vertex ? ' selected' : ''}" data-action="select-vertex" data-vertex="${v.id}">
      <title>${esc(v.name)}</title>
      <rect class="box" x="${p.x}" y="${p.y}" width="${W}" height="${h}" rx="6"/>
      ${lines.map((l, k) => `<text class="name" x="${p.x + 10}" y="${p.y + 20 + LINE * k}">${esc(l)}</text>`).join('')}
      <text x="${p.x + 10}" y="${below + 4}">${esc(line2)}</text>
      <text x="${p.x + 10}" y="${below + 22}">${esc(line3)}</text>${bar}</g>`;
  }
  svg += '</svg>';
  return `<div class="graph">${svg}<div class="legend"><span><i class="busy"></i>busy</span>
    <span><i class="backpressured"></i>backpressured</span><span><i class="idle"></i>idle</span>
    <span>(per second, the vertex's highest subtask)</span></div></div>`;
}

// Counters always; rates only while the subtask (or vertex) runs.
function metricCells(m, state) {
  if (m && state !== 'RUNNING') {
    m = Object.assign({}, m);
    for (const k of Object.keys(m)) if (k.endsWith('_per_s') || k === 'backpressure') delete m[k];
  }
  return `<td class="num" data-metric="records_in">${num(metric(m, 'records_in'))}</td>
    <td class="num" data-metric="records_out">${num(metric(m, 'records_out'))}</td>
    <td class="num">${num(metric(m, 'records_in_per_s'))}</td><td class="num">${num(metric(m, 'records_out_per_s'))}</td>
    <td class="num">${bytes(metric(m, 'bytes_in'))}</td><td class="num">${bytes(metric(m, 'bytes_out'))}</td>
    <td>${timebar(m)}</td>
    <td>${m && m.backpressure ? `<span class="bp ${esc(m.backpressure)}">${esc(m.backpressure.toUpperCase())}</span>` : '—'}</td>
    <td class="mono">${watermark(metric(m, 'input_watermark'))}</td><td class="mono">${watermark(metric(m, 'output_watermark'))}</td>`;
}
const METRIC_HEADS = `<th class="num">Records in</th><th class="num">Records out</th><th class="num">In/s</th>
  <th class="num">Out/s</th><th class="num">Bytes in</th><th class="num">Bytes out</th>
  <th>Busy · backpressured · idle</th><th>Backpressure</th><th>Input watermark</th><th>Output watermark</th>`;

function fillVertices(job) {
  const rows = job.vertices.map(v => `<tr class="clickable${v.id === ui.vertex ? ' selected' : ''}" data-action="select-vertex"
      data-vertex="${v.id}"><td>${esc(v.name)}</td><td class="num">${v.parallelism}</td><td>${status(v.state)}</td>
      ${metricCells(v.metrics, v.state)}</tr>`).join('');
  fill('s-vertices', `<table id="vertices"><thead><tr><th>Vertex</th><th class="num">Parallelism</th><th>Status</th>
    ${METRIC_HEADS}</tr></thead><tbody>${rows}</tbody></table>`);
}

function fillSubtasks(job) {
  const v = job.vertices.find(x => x.id === ui.vertex);
  const title = document.getElementById('s-subtasks-title');
  if (title) title.textContent = v ? 'Subtasks of ' + v.name : 'Subtasks';
  if (!v) return fill('s-subtasks', '<p class="muted">No vertex.</p>');
  const rows = v.subtasks.map(s => `<tr><td class="num">${s.subtask}</td><td class="num">${s.attempt}</td>
      <td>${status(s.state)}</td><td>${s.taskmanager ? esc(s.taskmanager) : '—'}</td>${metricCells(s.metrics, s.state)}</tr>`).join('');
  fill('s-subtasks', `<table id="subtasks"><thead><tr><th class="num">Subtask</th><th class="num">Attempt</th><th>State</th>
    <th>TaskManager</th>${METRIC_HEADS}</tr></thead><tbody>${rows}</tbody></table>`);
}

// A bar chart of `value(c)` over `list` (checkpoints, or other samples
// with an id: `what` names them in the bars' titles).
function chart(title, list, value, format, what = 'checkpoint') {
  const W = 460, H = 150, LEFT = 64, BOTTOM = 20;
  const top = Math.max(1, ...list.map(value));
  const step = (W - LEFT - 6) / Math.max(list.length, 1);
  let bars = '';
  list.forEach((c, i) => {
    const h = (H - BOTTOM - 8) * value(c) / top;
    bars += `<rect class="bar${c.savepoint ? ' savepoint' : ''}" x="${LEFT + i * step + 1}" y="${H - BOTTOM - h}"
      width="${Math.max(1, step - 2)}" height="${h}"><title>${what} ${c.id}: ${esc(format(value(c)))}</title></rect>`;
  });
  const first = list.length ? list[0].id : '', last = list.length ? list[list.length - 1].id : '';
  return `<div class="chart"><div class="title">${esc(title)}</div><svg width="${W}" height="${H}">
    <line class="axis" x1="${LEFT}" y1="${H - BOTTOM}" x2="${W}" y2="${H - BOTTOM}"/>
    <line class="axis" x1="${LEFT}" y1="8" x2="${LEFT}" y2="${H - BOTTOM}"/>
    <text x="${LEFT - 4}" y="14" text-anchor="end">${esc(format(top))}</text>
    <text x="${LEFT - 4}" y="${H - BOTTOM}" text-anchor="end">0</text>
    <text x="${LEFT}" y="${H - 4}">${first}</text><text x="${W}" y="${H - 4}" text-anchor="end">${last}</text>
    ${bars}</svg></div>`;
}

function fillCheckpoints(cps) {
  const done = cps.completed;
  const last = done.length ? done[done.length - 1] : null;
  const alignment = c => c.subtasks.reduce((a, s) => Math.max(a, s.alignment_ms), 0);
  const completed = cps.counts ? cps.counts.completed : done.length;
  let html = `<div class="cards">
    <div class="card"><div class="n" id="checkpoints-completed">${num(completed)}</div><div class="l">Completed</div></div>
    <div class="card"><div class="n">${num(cps.failed)}</div><div class="l">Failed</div></div>
    <div class="card"><div class="n">${last ? duration(last.duration_ms) : '—'}</div><div class="l">Last duration</div></div>
    <div class="card"><div class="n">${last ? bytes(last.state_bytes) : '—'}</div><div class="l">Last size</div></div>
    <div class="card" title="${cps.restored ? esc(cps.restored.path) : ''}"><div class="n" id="checkpoints-restored">${cps.restored ? '#' + cps.restored.id + ' at ' + time(cps.restored.time_ms) : '—'}</div><div class="l">Last restore</div></div></div>`;
  if (done.length === 0) return fill('s-checkpoints', html + '<p class="muted">No checkpoint completed yet.</p>');
  const recent = done.slice(-60);
  html += `<div class="charts">${chart('Duration of the last checkpoints', recent, c => c.duration_ms, duration)}
    ${chart('Size of the last checkpoints (all state)', recent, c => c.state_bytes, bytes)}</div>`;
  const rows = done.slice(-30).reverse().map(c => `<tr class="clickable${c.id === ui.checkpoint ? ' selected' : ''}"
      data-action="select-checkpoint" data-checkpoint="${c.id}"><td class="num">${c.id}</td>
      <td>COMPLETED${c.savepoint ? ' (savepoint)' : ''}${c.final ? ' (final)' : ''}</td><td>${time(c.trigger_time_ms)}</td>
      <td class="num">${duration(c.duration_ms)}</td><td class="num">${bytes(c.state_bytes)}</td>
      <td class="num">${bytes(c.new_bytes)}</td><td class="num">${duration(alignment(c))}</td></tr>`).join('');
  html += `<h2>History</h2><table id="checkpoints"><thead><tr><th class="num">ID</th><th>Status</th><th>Triggered</th>
    <th class="num">Duration</th><th class="num">Size</th><th class="num">Written</th><th class="num">Max alignment</th></tr></thead>
    <tbody>${rows}</tbody></table>`;
  if (completed > 30) html += `<p class="muted">The last 30 of ${num(completed)} shown; click one for its subtasks.</p>`;
  else html += '<p class="muted">Click a checkpoint for its subtasks.</p>';
  fill('s-checkpoints', html);
}

// The selected checkpoint's subtasks: how long each took on its task
// thread (sync), writing its state (async) and aligning its barriers, and
// the size of the state it acknowledged.
// A subtask's task index counts the subtasks vertex by vertex.
function fillCheckpointDetail(job, cps) {
  const c = ui.checkpoint === null ? null : cps.completed.find(x => x.id === ui.checkpoint);
  if (!c) return fill('s-checkpoint-detail', '');
  const owner = [];
  for (const v of job.vertices.slice().sort((a, b) => a.id - b.id)) {
    for (let i = 0; i < v.parallelism; ++i) owner.push([v.name, i]);
  }
  const rows = c.subtasks.map(t => {
    const [name, subtask] = owner[t.task] || ['?', t.task];
    return `<tr><td>${esc(name)}</td><td class="num">${subtask}</td><td class="num">${duration(t.sync_ms)}</td>
      <td class="num">${duration(t.async_ms)}</td><td class="num">${duration(t.alignment_ms)}</td>
      <td class="num" data-state-bytes="${t.state_bytes}">${bytes(t.state_bytes)}</td></tr>`;
  }).join('');
  fill('s-checkpoint-detail', `<h3 id="checkpoint-detail-title">Checkpoint ${c.id}: ${c.subtasks.length} subtasks</h3>
    <table id="checkpoint-detail"><thead><tr><th>Vertex</th><th class="num">Subtask</th><th class="num">Sync</th>
    <th class="num">Async</th><th class="num">Alignment</th><th class="num">State size</th></tr></thead><tbody>${rows}</tbody></table>`);
}

// Failures whose causes differ only in their numbers (offsets, subtasks,
// attempts) are one kind: grouped, with how often, first and last time,
// and what failed.
function causeKind(cause) {
  return String(cause).replace(/[0-9]+/g, 'N');
}
function groupFailures(list) {
  const groups = new Map();
  for (const f of list) {  // oldest first
    const key = causeKind(f.cause);
    const g = groups.get(key) || { cause: f.cause, count: 0, first: f.time_ms, last: f.time_ms, scopes: [] };
    g.count += 1;
    g.last = f.time_ms;
    g.cause = f.cause;  // the latest wording
    if (!g.scopes.includes(f.scope)) g.scopes.push(f.scope);
    groups.set(key, g);
  }
  return [...groups.values()].sort((a, b) => b.last - a.last);
}

function fillExceptions(job) {
  const list = (job.failures || []).slice().reverse();
  let html = '';
  if (job.status === 'FAILED' && job.failure) html += `<div class="notice error">The job failed: ${esc(job.failure)}</div>`;
  if (list.length === 0) return fill('s-exceptions', html + '<p class="muted">No failures.</p>');
  const scopes = g => {
    const shown = g.scopes.slice(0, 6).map(esc).join(', ');
    return g.scopes.length > 6 ? `${shown} and ${g.scopes.length - 6} more` : shown;
  };
  const groups = groupFailures(list.slice().reverse());
  const grouped = groups.map(g => `<tr><td class="num" data-count>${g.count}</td><td>${time(g.first)}</td>` +
    `<td>${time(g.last)}</td><td>${scopes(g)}</td><td class="cause">${esc(g.cause)}</td></tr>`).join('');
  html += `<h3>By cause</h3><table id="exception-groups"><thead><tr><th class="num">Times</th><th>First</th>` +
    `<th>Last</th><th>What failed</th><th>Cause (the latest)</th></tr></thead><tbody>${grouped}</tbody></table>`;
  const rows = list.map(f => `<tr><td>${time(f.time_ms)}</td><td>${esc(f.scope)}</td><td class="cause">${esc(f.cause)}</td></tr>`).join('');
  html += `<h3>Each failure, newest first</h3>`;
  html += `<table id="exceptions"><thead><tr><th>Time</th><th>What failed</th><th>Cause</th></tr></thead><tbody>${rows}</tbody></table>`;
  if (job.failures_total > list.length) html += `<p class="muted">The last ${list.length} of ${job.failures_total} failures shown.</p>`;
  fill('s-exceptions', html);
}

async function act(what) {
  const id = ui.route.id;
  ui.confirm = null;
  ui.acting = true;
  ui.notice = { text: what === 'cancel' ? 'Cancelling…' : 'Taking a savepoint…' };
  if (ui.job) fillJobHead(ui.job);
  try {
    if (what === 'cancel') {
      await api('POST', `/v1/jobs/${id}/cancel`);
      ui.notice = { text: 'The job was cancelled.' };
    } else {
      const r = await api('POST', `/v1/jobs/${id}/${what === 'stop' ? 'stop' : 'savepoints'}`, {});
      ui.notice = { text: `${what === 'stop' ? 'Stopped with savepoint' : 'Savepoint'} ${r.checkpoint_id} at ${r.path}` };
    }
  } catch (e) {
    ui.notice = { text: e.message, error: true };
  }
  ui.acting = false;
  refresh();
}

// ---- the loop ----------------------------------------------------------------------

function parseRoute() {
  const hash = window.location.hash;
  let m = hash.match(/^#\/jobs\/([0-9a-f]+)$/);
  if (m) return { page: 'job', id: m[1] };
  m = hash.match(/^#\/taskmanagers\/(.+)$/);
  if (m) return { page: 'taskmanager', id: decodeURIComponent(m[1]) };
  if (hash === '#/jobmanager') return { page: 'jobmanager' };
  if (hash === '#/sql') return { page: 'sql' };
  return { page: 'overview' };
}

async function refresh() {
  clearTimeout(ui.timer);
  const generation = ++ui.generation;
  const route = ui.route;
  try {
    const render = route.page === 'job' ? await jobLoad(route.id)
      : route.page === 'taskmanager' ? await taskmanagerLoad(route.id)
      : route.page === 'jobmanager' ? await jobmanagerLoad()
      : route.page === 'sql' ? await sqlLoad()
      : await overviewLoad();
    if (generation !== ui.generation) return;  // a newer refresh (or page) took over
    render();
    banner('');
    document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString('en-GB');
  } catch (e) {
    if (generation !== ui.generation) return;
    banner('The JobManager did not answer: ' + e.message);
  }
  ui.timer = setTimeout(refresh, REFRESH_MS);
}

function navigate() {
  ui.route = parseRoute();
  if (ui.route.page === 'job') jobLayout(ui.route.id);
  else if (ui.route.page === 'taskmanager') taskmanagerLayout(ui.route.id);
  else if (ui.route.page === 'jobmanager') jobmanagerLayout();
  else if (ui.route.page === 'sql') sqlLayout();
  else overviewLayout();
  refresh();
}

document.addEventListener('DOMContentLoaded', () => {
  app().addEventListener('click', e => {
    const target = e.target.closest('[data-action]');
    if (!target || target.disabled) return;
    const action = target.dataset.action;
    if (action === 'log-follow') {
      procs.follow = target.checked;
      return;
    }
    if (action === 'sql-explain') return sqlExplain();
    if (action === 'sql-submit') return sqlSubmit();
    if (action === 'output') {
      showOutput(target.dataset.output);
      return;
    }
    if (action === 'log-download') {
      downloadLog().catch(err => banner('The log could not be downloaded: ' + err.message));
      return;
    }
    if (action === 'select-checkpoint') {
      ui.checkpoint = Number(target.dataset.checkpoint);
      if (ui.job && ui.cps) { fillCheckpoints(ui.cps); fillCheckpointDetail(ui.job, ui.cps); }
      return;
    }
    if (action === 'select-vertex') {
      ui.vertex = Number(target.dataset.vertex);
      if (ui.job) { fill('s-graph', graph(ui.job)); fillVertices(ui.job); fillSubtasks(ui.job); }
      return;
    }
    if (action === 'ask-stop' || action === 'ask-cancel') ui.confirm = action.slice(4);
    else if (action === 'no') ui.confirm = null;
    else if (action === 'savepoint') return act('savepoint');
    else if (action === 'do-stop') return act('stop');
    else if (action === 'do-cancel') return act('cancel');
    if (ui.job) fillJobHead(ui.job);
  });
  document.getElementById('logout').addEventListener('click', async () => {
    try {
      await api('POST', '/ui/logout');
    } finally {
      window.location.href = '/ui/login';
    }
  });
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) refresh();
  });
  window.addEventListener('hashchange', navigate);
  navigate();
});
