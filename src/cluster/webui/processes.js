// weir's web UI: the cluster's processes. A TaskManager's page (what it
// offers and uses, charted over the page's life, the subtasks in its
// slots, its configuration, its log and its standard output) and the
// JobManager's (configuration, log). Logs arrive in bounded pieces (GET
// .../log?offset=&length=, lines numbered by the process; GET .../stdout,
// bytes of the file the process writes, whose pieces say where the next
// starts): the viewer shows the last lines, follows new ones while
// "Follow" is ticked, and "Download" saves everything the process still
// keeps. Uses the helpers of app.js.
'use strict';

const LOG_FIRST = 200;            // lines shown when a log is opened
const LOG_KEEP = 2000;            // lines kept in the viewer
const LOG_PAGE = 1000;            // the most one request asks for (the API's bound)
const STDOUT_FIRST = 64 * 1024;   // bytes of standard output shown when opened
const STDOUT_PAGE = 1024 * 1024;  // the most one request asks for (the API's bound)
const SAMPLES_KEPT = 150;         // of a TaskManager's memory and buffers, one per refresh

const procs = {
  log: null,      // {path, bytes, next, size, lines, error}: the log being shown
  follow: true,
  output: 'log',  // on a TaskManager's page: 'log' or 'stdout'
  samples: [],    // [{id, rss, buffers}] of the TaskManager shown
};

// ---- logs ----------------------------------------------------------------------

// The newest lines of the log at `path` (a REST route; `bytes`: standard
// output, read by byte offsets), appended to what the viewer holds: the
// last ones at first, then (while following) everything after. A process
// whose standard output cannot be read says why, in the viewer.
async function readLog(path, bytes) {
  if (!procs.log || procs.log.path !== path) procs.log = { path, bytes, next: null, size: 0, lines: [], error: null };
  const log = procs.log;
  if (log.next !== null && !procs.follow) return log;
  const offset = log.next === null ? (bytes ? -STDOUT_FIRST : -LOG_FIRST) : log.next;
  let piece;
  try {
    piece = await api('GET', `${path}?offset=${offset}&length=${bytes ? STDOUT_PAGE : LOG_PAGE}`);
  } catch (e) {
    if (!bytes) throw e;
    log.error = e.message;
    return log;
  }
  if (procs.log !== log) return log;  // another log was opened meanwhile
  log.error = null;
  if (bytes) {
    if (log.next !== null && piece.offset < log.next) log.lines.push('… the file was rotated or truncated …');
    log.lines.push(...piece.lines);
    log.next = piece.end;
    log.size = piece.size;
  } else {
    if (log.next !== null && piece.first > log.next) log.lines.push(`… ${piece.first - log.next} lines dropped from the process's memory …`);
    log.lines.push(...piece.lines);
    const start = offset < 0 ? Math.max(piece.first, piece.next + offset) : Math.max(offset, piece.first);
    log.next = start + piece.lines.length;
  }
  if (log.lines.length > LOG_KEEP) log.lines.splice(0, log.lines.length - LOG_KEEP);
  return log;
}

// The viewer, under `title` or (on a TaskManager's page) the log and
// standard output as tabs.
function logSection(title, tabs) {
  const head = tabs ? `<h2 class="tabs">${['log', 'stdout'].map(t => `<button type="button" id="output-${t}"
      class="tab${procs.output === t ? ' active' : ''}" data-action="output" data-output="${t}">${t === 'log' ? 'Log' : 'Stdout'}</button>`).join('')}</h2>`
    : `<h2>${esc(title)}</h2>`;
  return `${head}
    <div class="logbar"><label><input type="checkbox" id="log-follow" data-action="log-follow"${procs.follow ? ' checked' : ''}> Follow</label>
    <button type="button" class="quiet" id="log-download" data-action="log-download">Download</button>
    <span class="muted" id="log-status"></span></div>
    <pre class="log" id="log-view"></pre>`;
}

function fillLog(log) {
  const view = document.getElementById('log-view');
  if (!view) return;
  const text = log.error ? log.error : log.lines.join('\n');
  if (ui.sections.get('log-view') === text) return;
  const atBottom = view.scrollTop + view.clientHeight >= view.scrollHeight - 4;
  view.textContent = text;
  view.classList.toggle('muted', Boolean(log.error));
  ui.sections.set('log-view', text);
  if (procs.follow || atBottom) view.scrollTop = view.scrollHeight;
  document.getElementById('log-status').textContent = log.error ? ''
    : log.bytes ? `${log.lines.length} lines shown, up to byte ${num(log.next)} of ${num(log.size)}`
    : `${log.lines.length} lines shown, up to line ${log.next}`;
}

// Everything the process keeps, piece by piece, saved as a file.
async function downloadLog() {
  if (!procs.log) return;
  const { path, bytes } = procs.log;
  const lines = [];
  if (bytes) {
    for (let at = 0, size = 1; at < size;) {
      const piece = await api('GET', `${path}?offset=${at}&length=${STDOUT_PAGE}`);
      if (piece.end <= at) break;
      lines.push(...piece.lines);
      at = piece.end;
      size = piece.size;
    }
  } else {
    const first = await api('GET', `${path}?offset=0&length=1`);
    for (let at = first.first, end = first.next; at < end;) {
      const piece = await api('GET', `${path}?offset=${at}&length=${LOG_PAGE}`);
      if (piece.lines.length === 0) break;
      lines.push(...piece.lines);
      at = Math.max(at, piece.first) + piece.lines.length;
    }
  }
  const name = (ui.route.page === 'taskmanager' ? ui.route.id : 'jobmanager') + (bytes ? '.out' : '.log');
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

// A TaskManager's page shows its log or its standard output.
function showOutput(which) {
  if (procs.output === which) return;
  procs.output = which;
  procs.log = null;
  for (const t of ['log', 'stdout']) {
    const tab = document.getElementById('output-' + t);
    if (tab) tab.classList.toggle('active', t === which);
  }
  ui.sections.delete('log-view');
  refresh();
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
    ${logSection('', true)}`);
}

async function taskmanagerLoad(id) {
  const path = '/v1/taskmanagers/' + encodeURIComponent(id);
  const [tm, log] = await Promise.all([api('GET', path),
    procs.output === 'stdout' ? readLog(path + '/stdout', true) : readLog(path + '/log')]);
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
