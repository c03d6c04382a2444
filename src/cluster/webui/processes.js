// weir's web UI: the cluster's processes. A TaskManager's page (what it
// offers and uses, charted over the page's life, the subtasks in its
// slots, its configuration, its log) and the JobManager's (configuration,
// log). Logs arrive in bounded pieces (GET .../log?offset=&length=): the
// viewer shows the last lines, follows new ones while "Follow" is ticked,
// and "Download" saves every line the process still keeps. Uses the
// helpers of app.js.
'use strict';

const LOG_FIRST = 200;     // lines shown when a log is opened
const LOG_KEEP = 2000;     // lines kept in the viewer
const LOG_PAGE = 1000;     // the most one request asks for (the API's bound)
const SAMPLES_KEPT = 150;  // of a TaskManager's memory and buffers, one per refresh

const procs = {
  log: null,      // {path, next, lines}: the log being shown
  follow: true,
  samples: [],    // [{id, rss, buffers}] of the TaskManager shown
};

// ---- logs ----------------------------------------------------------------------

// The newest lines of the log at `path` (a REST route), appended to what
// the viewer holds: the last LOG_FIRST at first, then (while following)
// everything after.
async function readLog(path) {
  if (!procs.log || procs.log.path !== path) procs.log = { path, next: null, lines: [] };
  const log = procs.log;
  if (log.next !== null && !procs.follow) return log;
  const offset = log.next === null ? -LOG_FIRST : log.next;
  const piece = await api('GET', `${path}?offset=${offset}&length=${LOG_PAGE}`);
  if (procs.log !== log) return log;  // another log was opened meanwhile
  if (log.next !== null && piece.first > log.next) log.lines.push(`… ${piece.first - log.next} lines dropped from the process's memory …`);
  log.lines.push(...piece.lines);
  if (log.lines.length > LOG_KEEP) log.lines.splice(0, log.lines.length - LOG_KEEP);
  const start = offset < 0 ? Math.max(piece.first, piece.next + offset) : Math.max(offset, piece.first);
  log.next = start + piece.lines.length;
  return log;
}

function logSection(title) {
  return `<h2>${esc(title)}</h2>
    <div class="logbar"><label><input type="checkbox" id="log-follow" data-action="log-follow"${procs.follow ? ' checked' : ''}> Follow</label>
    <button type="button" class="quiet" id="log-download" data-action="log-download">Download</button>
    <span class="muted" id="log-status"></span></div>
    <pre class="log" id="log-view"></pre>`;
}

function fillLog(log) {
  const view = document.getElementById('log-view');
  if (!view) return;
  const text = log.lines.join('\n');
  if (ui.sections.get('log-view') === text) return;
  const atBottom = view.scrollTop + view.clientHeight >= view.scrollHeight - 4;
  view.textContent = text;
  ui.sections.set('log-view', text);
  if (procs.follow || atBottom) view.scrollTop = view.scrollHeight;
  document.getElementById('log-status').textContent = `${log.lines.length} lines shown, up to line ${log.next}`;
}

// Every line the process keeps, page by page, saved as a file.
async function downloadLog() {
  if (!procs.log) return;
  const path = procs.log.path;
  const first = await api('GET', `${path}?offset=0&length=1`);
  const lines = [];
  for (let at = first.first, end = first.next; at < end;) {
    const piece = await api('GET', `${path}?offset=${at}&length=${LOG_PAGE}`);
    if (piece.lines.length === 0) break;
    lines.push(...piece.lines);
    at = Math.max(at, piece.first) + piece.lines.length;
  }
  const name = (ui.route.page === 'taskmanager' ? ui.route.id : 'jobmanager') + '.log';
  const url = URL.createObjectURL(new Blob([lines.join('\n') + '\n'], { type: 'text/plain' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  const button = document.getElementById('log-download');
  if (button) button.dataset.lines = String(lines.length);
}

function configTable(id, config) {
  const rows = Object.keys(config).sort().map(k => `<tr><td class="mono">${esc(k)}</td><td class="mono">${esc(
    typeof config[k] === 'object' ? JSON.stringify(config[k]) : config[k])}</td></tr>`).join('');
  return `<table id="${id}"><thead><tr><th>Key</th><th>Value</th></tr></thead><tbody>${rows}</tbody></table>`;
}

// ---- a TaskManager ----------------------------------------------------------------

function taskmanagerLayout(id) {
  document.title = 'weir: TaskManager ' + id;
  procs.log = null;
  procs.samples = [];
  layout(`<h1 id="tm-name">TaskManager ${esc(id)}</h1>
    <div id="s-tm-cards"></div><div id="s-tm-charts"></div>
    <h2>Slots</h2><div id="s-tm-slots"></div>
    <h2>Configuration</h2><div id="s-tm-config"></div>
    ${logSection('Log')}`);
}

async function taskmanagerLoad(id) {
  const path = '/v1/taskmanagers/' + encodeURIComponent(id);
  const [tm, log] = await Promise.all([api('GET', path), readLog(path + '/log')]);
  return () => taskmanagerRender(tm, log);
}

function taskmanagerRender(tm, log) {
  procs.samples.push({ id: procs.samples.length ? procs.samples[procs.samples.length - 1].id + 1 : 1,
    rss: tm.rss_bytes, buffers: tm.network_buffers_used });
  if (procs.samples.length > SAMPLES_KEPT) procs.samples.shift();
  fill('s-tm-cards', `<div class="cards">
    <div class="card"><div class="n" id="tm-slots">${tm.slots_used} / ${tm.slots}</div><div class="l">Slots used</div></div>
    <div class="card"><div class="n">${tm.rss_bytes ? bytes(tm.rss_bytes) : '—'}</div><div class="l">Memory (RSS)</div></div>
    <div class="card"><div class="n">${num(tm.network_buffers_used)} / ${num(tm.network_buffers)}</div><div class="l">Network buffers used (32 KiB each)</div></div>
    <div class="card"><div class="n">${num(tm.last_heartbeat_ms_ago)} ms</div><div class="l">Since its last heartbeat</div></div>
    <div class="card"><div class="n">${time(tm.registered_ms)}</div><div class="l">Registered</div></div></div>
    <p class="muted">Data plane <span class="mono">${esc(tm.data_address)}</span>${tm.metrics_address
      ? `, metrics <span class="mono">http://${esc(tm.metrics_address)}/metrics</span>` : ''}</p>`);
  fill('s-tm-charts', `<div class="charts">${chart('Memory (RSS) while this page is open', procs.samples, s => s.rss || 0, bytes, 'refresh')}
    ${chart('Network buffers in use while this page is open', procs.samples, s => s.buffers || 0, num, 'refresh')}</div>`);
  const rows = tm.subtasks.map(s => `<tr><td><a href="#/jobs/${esc(s.job_id)}">${esc(s.job_name)}</a></td>
      <td>${esc(s.vertex_name)}</td><td class="num">${s.subtask}</td><td class="num">${s.attempt}</td><td>${status(s.state)}</td></tr>`).join('');
  fill('s-tm-slots', tm.subtasks.length === 0 ? '<p class="muted">Nothing runs here.</p>'
    : `<table id="tm-subtasks"><thead><tr><th>Job</th><th>Vertex</th><th class="num">Subtask</th><th class="num">Attempt</th>
       <th>State</th></tr></thead><tbody>${rows}</tbody></table>`);
  fill('s-tm-config', configTable('tm-config', tm.config));
  fillLog(log);
}

// ---- the JobManager ------------------------------------------------------------------

function jobmanagerLayout() {
  document.title = 'weir: JobManager';
  procs.log = null;
  layout(`<h1>JobManager</h1>
    <h2>Configuration</h2><div id="s-jm-config"></div>
    ${logSection('Log')}`);
}

async function jobmanagerLoad() {
  const [config, log] = await Promise.all([api('GET', '/v1/jobmanager/config'), readLog('/v1/jobmanager/log')]);
  return () => {
    fill('s-jm-config', configTable('jm-config', config));
    fillLog(log);
  };
}
