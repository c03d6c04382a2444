// weir's web UI: the SQL page. A script (CREATE TABLE, SET and INSERT INTO
// ... SELECT statements, as `weir sql FILE` runs) is pasted or typed,
// explained (POST /v1/sql/explain: each INSERT's plan, or the error with
// its line and column, which the editor selects) and submitted as the
// built-in job sql (POST /v1/jobs), whose page opens then. The script is
// kept in the browser between visits. Uses the helpers of app.js.
'use strict';

const SQL_KEPT = 'weir-sql-script';
const SQL_EXAMPLE = `-- Bids from the Nexmark generator, counted per auction every 2 s over the last 10 s.
CREATE TABLE bid (
  auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
  \`dateTime\` TIMESTAMP(3), extra VARCHAR,
  WATERMARK FOR \`dateTime\` AS \`dateTime\` - INTERVAL '4' SECOND
) WITH ('connector' = 'nexmark', 'events.num' = '1000000');
CREATE TABLE hot (auction BIGINT, bids BIGINT, window_end TIMESTAMP(3))
  WITH ('connector' = 'blackhole');
INSERT INTO hot
SELECT auction, COUNT(*), window_end
FROM TABLE(HOP(TABLE bid, DESCRIPTOR(\`dateTime\`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end;
`;

function sqlLayout() {
  document.title = 'weir: SQL';
  const kept = localStorage.getItem(SQL_KEPT);
  layout(`<h1>SQL</h1>
    <p class="sub">A script of <span class="mono">CREATE TABLE</span>, <span class="mono">SET</span> and
      <span class="mono">INSERT INTO … SELECT</span> statements runs as one job, as
      <span class="mono">weir sql FILE</span> runs it (docs/sql.md).</p>
    <div class="sql-editor"><textarea id="sql-script" spellcheck="false" aria-label="SQL script">${esc(kept === null ? SQL_EXAMPLE : kept)}</textarea></div>
    <div class="sql-bar">
      <button type="button" id="sql-explain" data-action="sql-explain">Explain</button>
      <button type="button" class="secondary" id="sql-submit" data-action="sql-submit">Submit</button>
      <label>Parallelism <input id="sql-parallelism" type="number" min="1" placeholder="script's"></label>
      <label>Checkpoints to <input id="sql-checkpoint-dir" class="wide" placeholder="a directory every process reaches"></label>
      <span class="muted" id="sql-status"></span>
    </div>
    <div id="s-sql-result"></div>`);
  document.getElementById('sql-script').addEventListener('input', e => localStorage.setItem(SQL_KEPT, e.target.value));
}

// The page has nothing to refresh: what it shows changes when asked.
async function sqlLoad() {
  return () => {};
}

function sqlScript() {
  return document.getElementById('sql-script').value;
}

// "line L, column C: ..." of an error selects that place in the editor.
function sqlShowError(message) {
  fill('s-sql-result', `<div class="notice error" id="sql-error">${esc(message)}</div>`);
  const m = message.match(/line (\d+), column (\d+)/);
  if (!m) return;
  const area = document.getElementById('sql-script');
  const lines = area.value.split('\n');
  let at = 0;
  for (let i = 0; i < Number(m[1]) - 1 && i < lines.length; ++i) at += lines[i].length + 1;
  at += Number(m[2]) - 1;
  area.focus();
  area.setSelectionRange(at, Math.min(area.value.length, at + 1));
}

async function sqlExplain() {
  document.getElementById('sql-status').textContent = 'Planning…';
  try {
    const r = await api('POST', '/v1/sql/explain', { script: sqlScript() });
    fill('s-sql-result', `<h2>Plan</h2><pre class="plan" id="sql-plan">${esc(r.plan)}</pre>`);
  } catch (e) {
    sqlShowError(e.message);
  }
  document.getElementById('sql-status').textContent = '';
}

async function sqlSubmit() {
  const args = ['--script', sqlScript()];
  const p = document.getElementById('sql-parallelism').value.trim();
  const dir = document.getElementById('sql-checkpoint-dir').value.trim();
  if (p !== '') args.push('-p', p);
  if (dir !== '') args.push('--checkpoint-dir', dir);
  document.getElementById('sql-status').textContent = 'Submitting…';
  try {
    await api('POST', '/v1/sql/explain', { script: sqlScript() });  // a script that would not run is not submitted
    const r = await api('POST', '/v1/jobs', { name: 'sql', args });
    window.location.hash = '#/jobs/' + r.job_id;
  } catch (e) {
    sqlShowError(e.message);
    document.getElementById('sql-status').textContent = '';
  }
}
