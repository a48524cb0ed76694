// hbtsdb's query page: a PromQL editor (Prometheus' codemirror-promql, with
// completion of functions, metric names, label names and values from this
// server's API), instant and range queries, a chart (uPlot) and a table. The
// state of the form lives in the URL's query string, so a link shows the same
// query: q (the expression), mode (instant|range), range (a duration), end
// (RFC 3339; absent: now) and step (a duration; absent: about 250 points).
//
// Every request goes to the API relative to this page, so the page works
// behind a reverse proxy that serves hbtsdb under a path, and under
// --web.config.file's basic auth (the browser sends the credentials it
// asked for to load the page).

import { EditorState, Prec } from '@codemirror/state';
import { EditorView, keymap, placeholder, drawSelection, highlightSpecialChars } from '@codemirror/view';
import { history as editHistory, historyKeymap, defaultKeymap, insertNewlineAndIndent } from '@codemirror/commands';
import { autocompletion, completionKeymap, closeBrackets, closeBracketsKeymap } from '@codemirror/autocomplete';
import { bracketMatching, syntaxHighlighting, HighlightStyle } from '@codemirror/language';
import { lintKeymap } from '@codemirror/lint';
import { tags } from '@lezer/highlight';
import { PromQLExtension } from '@prometheus-io/codemirror-promql';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './style.css';

// base is the URL this page is served under, without its trailing slash.
const base = new URL('.', document.baseURI).href.replace(/\/$/, '');
const $ = (id) => document.getElementById(id);

// ---- durations (Prometheus' syntax: 1h30m, 90s, 2d, 500ms) -----------------

const units = { y: 365 * 86400e3, w: 7 * 86400e3, d: 86400e3, h: 3600e3, m: 60e3, s: 1e3, ms: 1 };

// parseDuration returns the duration in milliseconds, or null when s is not one.
export function parseDuration(s) {
  s = (s || '').trim();
  if (!/^(\d+(ms|[ywdhms]))+$/.test(s)) return null;
  let ms = 0;
  for (const [, n, u] of s.matchAll(/(\d+)(ms|[ywdhms])/g)) ms += Number(n) * units[u];
  return ms > 0 ? ms : null;
}

// formatDuration is parseDuration's inverse for whole seconds and more.
export function formatDuration(ms) {
  if (ms < 1000) return `${Math.max(1, Math.round(ms))}ms`;
  let rest = Math.round(ms / 1000);
  let out = '';
  for (const [u, secs] of [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]]) {
    if (rest >= secs) {
      out += `${Math.floor(rest / secs)}${u}`;
      rest %= secs;
    }
  }
  return out;
}

// autoStep is the step Prometheus' own UI picks: about 250 points, at least 1s.
const autoStep = (rangeMs) => Math.max(1000, Math.round(rangeMs / 250 / 1000) * 1000);

// ---- state <-> form <-> URL --------------------------------------------------

const state = { q: '', mode: 'range', range: '1h', end: '', step: '' };

function readURL() {
  const p = new URLSearchParams(location.search);
  state.q = p.get('q') || '';
  state.mode = p.get('mode') === 'instant' ? 'instant' : 'range';
  state.range = p.get('range') || '1h';
  state.end = p.get('end') || '';
  state.step = p.get('step') || '';
}

// writeURL puts the state in the URL: a new history entry when push is true
// (a query the user ran), the current one replaced otherwise (a link opened).
function writeURL(push) {
  const p = new URLSearchParams();
  p.set('q', state.q);
  p.set('mode', state.mode);
  if (state.mode === 'range') {
    p.set('range', state.range);
    if (state.step) p.set('step', state.step);
  }
  if (state.end) p.set('end', state.end);
  const search = `?${p}`;
  if (search === location.search) return;
  if (push) window.history.pushState(null, '', search);
  else window.history.replaceState(null, '', search);
}

// datetime-local inputs hold local time without a zone; the URL holds RFC 3339 UTC.
function toLocalInput(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const off = d.getTimezoneOffset() * 60e3;
  return new Date(d.getTime() - off).toISOString().slice(0, 19);
}

function fromLocalInput(v) {
  if (!v) return '';
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString().replace('.000Z', 'Z');
}

function showState() {
  setQuery(state.q);
  document.body.dataset.mode = state.mode;
  for (const b of document.querySelectorAll('[data-mode]')) {
    b.setAttribute('aria-checked', String(b.dataset.mode === state.mode));
  }
  $('range').value = state.range;
  $('end').value = toLocalInput(state.end);
  $('step').value = state.step;
  updateStepPlaceholder();
}

function updateStepPlaceholder() {
  const r = parseDuration($('range').value);
  $('step').placeholder = r ? formatDuration(autoStep(r)) : 'auto';
}

// ---- the editor ----------------------------------------------------------------

const highlight = HighlightStyle.define([
  { tag: tags.number, color: '#09885a' },
  { tag: tags.string, color: '#a31515' },
  { tag: tags.keyword, color: '#008080', fontWeight: 'bold' },
  { tag: tags.function(tags.variableName), color: '#0a4db3' },
  { tag: tags.labelName, color: '#800000' },
  { tag: tags.operator, color: '#5a5a5a' },
  { tag: tags.modifier, color: '#008080', fontWeight: 'bold' },
  { tag: tags.operatorKeyword, color: '#0a4db3', fontWeight: 'bold' },
  { tag: tags.logicOperator, color: '#008080', fontWeight: 'bold' },
  { tag: tags.comment, color: '#888', fontStyle: 'italic' },
]);

const promql = new PromQLExtension().setComplete({
  remote: {
    url: base,
    httpMethod: 'GET',
    lookbackInterval: 12 * 3600e3,
    httpErrorHandler: (err) => console.warn('completion:', err),
    cache: { maxAge: 60e3 },
  },
});

const editor = new EditorView({
  parent: $('editor'),
  state: EditorState.create({
    extensions: [
      highlightSpecialChars(),
      editHistory(),
      drawSelection(),
      bracketMatching(),
      closeBrackets(),
      autocompletion({ icons: false }),
      syntaxHighlighting(highlight),
      placeholder('Expression (press Enter to run; Shift+Enter for a new line)'),
      EditorView.lineWrapping,
      promql.asExtension(),
      // Enter runs the query unless the completion list is open (its keymap,
      // added by autocompletion(), takes precedence and accepts the completion).
      Prec.high(keymap.of([
        { key: 'Enter', run: () => { run(); return true; } },
        { key: 'Shift-Enter', run: insertNewlineAndIndent },
      ])),
      keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap, ...lintKeymap]),
    ],
  }),
});

function setQuery(q) {
  if (editor.state.doc.toString() !== q) {
    editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: q } });
  }
}

// ---- running a query -----------------------------------------------------------

let inFlight = null;

// run runs the form's query and shows its result; push says whether it makes
// a new history entry (see writeURL).
async function run(push = true) {
  state.q = editor.state.doc.toString().trim();
  state.range = $('range').value.trim() || '1h';
  state.step = $('step').value.trim();
  state.end = fromLocalInput($('end').value);
  writeURL(push);
  if (!state.q) return;

  const params = new URLSearchParams({ query: state.q });
  const endMs = state.end ? new Date(state.end).getTime() : Date.now();
  let path = '/api/v1/query';
  let rangeMs = 0;
  let stepMs = 0;
  if (state.mode === 'range') {
    rangeMs = parseDuration(state.range);
    if (!rangeMs) return showError(`Range "${state.range}" is not a duration such as 1h or 30m.`);
    stepMs = state.step ? parseDuration(state.step) : autoStep(rangeMs);
    if (!stepMs) return showError(`Step "${state.step}" is not a duration such as 15s or 1m.`);
    path = '/api/v1/query_range';
    params.set('start', String((endMs - rangeMs) / 1000));
    params.set('end', String(endMs / 1000));
    params.set('step', String(stepMs / 1000));
  } else {
    params.set('time', String(endMs / 1000));
  }

  inFlight?.abort();
  const ctl = new AbortController();
  inFlight = ctl;
  document.body.classList.add('loading');
  const started = performance.now();
  try {
    // POST keeps long expressions out of the URL's length limits.
    const res = await fetch(base + path, {
      method: 'POST',
      body: params,
      signal: ctl.signal,
      headers: { Accept: 'application/json' },
    });
    const text = await res.text();
    let body;
    try {
      body = JSON.parse(text);
    } catch {
      return showError(`${res.status} ${res.statusText}: ${text.trim() || 'no answer'}`);
    }
    if (body.status !== 'success') {
      return showError(body.error || `${res.status} ${res.statusText}`, body.errorType, body);
    }
    showMessages(body);
    const took = Math.round(performance.now() - started);
    if (state.mode === 'range') {
      showMatrix(body.data, endMs - rangeMs, endMs, stepMs, took);
    } else {
      showInstant(body.data, took);
    }
  } catch (err) {
    if (err.name !== 'AbortError') showError(`The server did not answer: ${err.message}`);
  } finally {
    if (inFlight === ctl) {
      inFlight = null;
      document.body.classList.remove('loading');
    }
  }
}

// ---- messages --------------------------------------------------------------------

function message(kind, text) {
  const div = document.createElement('div');
  div.className = `message ${kind}`;
  div.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  div.textContent = text;
  return div;
}

function showMessages(body) {
  const box = $('messages');
  box.replaceChildren(
    ...(body.warnings || []).map((w) => message('warning', w)),
    ...(body.infos || []).map((i) => message('info', i)),
  );
}

function showError(text, errorType, body) {
  clearResults();
  const box = $('messages');
  box.replaceChildren(message('error', errorType ? `${errorType}: ${text}` : text));
  if (body) {
    for (const w of body.warnings || []) box.append(message('warning', w));
    for (const i of body.infos || []) box.append(message('info', i));
  }
}

function clearResults() {
  destroyChart();
  $('chart').hidden = true;
  $('table').replaceChildren();
  delete $('table').dataset.result;
  $('stats').textContent = '';
}

// ---- values and labels ----------------------------------------------------------

// num turns an API value ("1.5", "NaN", "+Inf") into a number.
function num(v) {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
}

function seriesName(metric) {
  const { __name__: name = '', ...rest } = metric || {};
  const pairs = Object.entries(rest).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return pairs.length ? `${name}{${pairs.join(', ')}}` : name || '{}';
}

const palette = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f',
  '#bcbd22', '#17becf', '#393b79', '#637939', '#8c6d31', '#843c39', '#7b4173', '#3182bd'];
const color = (i) => palette[i % palette.length];

function td(text, className) {
  const c = document.createElement('td');
  c.textContent = text;
  if (className) c.className = className;
  return c;
}

function table(headers, rows) {
  const t = document.createElement('table');
  const head = t.createTHead().insertRow();
  for (const h of headers) {
    const th = document.createElement('th');
    th.textContent = h;
    head.append(th);
  }
  const tbody = t.createTBody();
  for (const r of rows) tbody.append(r);
  return t;
}

// Bounds on what is drawn: a query that selects thousands of series must not
// freeze the tab. The status line says when a result was cut.
const maxChartSeries = 100;
const maxTableRows = 1000;

const fmtTime = (sec) => new Date(sec * 1000).toISOString().replace('.000Z', 'Z');

// ---- instant results: a table ----------------------------------------------------

function showInstant(data, took) {
  clearResults();
  let rows = [];
  let samples = 0;
  switch (data.resultType) {
    case 'vector':
      for (const s of data.result) {
        const tr = document.createElement('tr');
        const [, v] = s.value || s.histogram || [];
        tr.append(td(seriesName(s.metric), 'labels'), td(typeof v === 'string' ? v : JSON.stringify(v), 'value'));
        rows.push(tr);
        samples++;
      }
      break;
    case 'matrix':
      for (const s of data.result) {
        const tr = document.createElement('tr');
        const vals = (s.values || []).map(([t, v]) => `${v} @${t}`);
        samples += vals.length;
        tr.append(td(seriesName(s.metric), 'labels'), td(vals.join('\n'), 'value'));
        rows.push(tr);
      }
      break;
    default: {
      // scalar and string: [time, value]
      const tr = document.createElement('tr');
      tr.append(td(data.resultType, 'labels'), td(String(data.result[1]), 'value'));
      rows.push(tr);
      samples = 1;
    }
  }
  const what = data.resultType === 'vector' || data.resultType === 'matrix' ? `${data.result.length} series` : data.resultType;
  let cut = '';
  if (rows.length > maxTableRows) {
    cut = ` · the table shows the first ${maxTableRows}`;
    rows = rows.slice(0, maxTableRows);
  }
  $('stats').textContent = `${what} · ${samples} sample${samples === 1 ? '' : 's'} · ${took} ms${cut}`;
  $('table').dataset.result = data.resultType;
  $('table').replaceChildren(rows.length ? table(['Series', 'Value'], rows) : empty());
}

function empty() {
  const p = document.createElement('p');
  p.className = 'empty';
  p.textContent = 'No data.';
  return p;
}

// ---- range results: a chart and a table of its series -----------------------------

let chart = null;
let resizeObserver = null;

function destroyChart() {
  resizeObserver?.disconnect();
  resizeObserver = null;
  chart?.destroy();
  chart = null;
  $('chart').replaceChildren();
  delete $('chart').dataset.series;
}

function showMatrix(data, startMs, endMs, stepMs, took) {
  clearResults();
  if (data.resultType !== 'matrix') {
    // A scalar or string expression on the range endpoint answers a matrix
    // anyway; anything else is shown as it is.
    return showInstant(data, took);
  }
  const all = data.result;
  const series = all.slice(0, Math.min(maxChartSeries, maxTableRows));
  // Range queries answer on the grid start + k·step: the x axis is that grid.
  const startS = startMs / 1000;
  const stepS = stepMs / 1000;
  const n = Math.floor((endMs - startMs) / stepMs) + 1;
  const xs = Array.from({ length: n }, (_, k) => startS + k * stepS);
  const samples = all.reduce((sum, s) => sum + (s.values || []).length + (s.histograms || []).length, 0);
  const ys = series.map((s) => {
    const y = new Array(n).fill(null);
    for (const [t, v] of s.values || []) {
      const k = Math.round((t - startS) / stepS);
      const f = num(v);
      if (k >= 0 && k < n) y[k] = Number.isFinite(f) ? f : null;
    }
    return y;
  });
  const cut = all.length > series.length ? ` · the chart and the table show the first ${series.length}` : '';
  $('stats').textContent = `${all.length} series · ${samples} samples · step ${formatDuration(stepMs)} · ${took} ms${cut}`;

  // The table lists each series with its last value, or its value under the
  // chart's cursor while the cursor is on the chart.
  const valueCells = [];
  const rows = series.map((s, i) => {
    const tr = document.createElement('tr');
    const swatch = td('', 'swatch');
    swatch.style.setProperty('--color', color(i));
    const values = s.values || [];
    const last = values.length ? values[values.length - 1][1] : '';
    const cell = td(last, 'value');
    cell.dataset.last = last;
    valueCells.push(cell);
    tr.append(swatch, td(seriesName(s.metric), 'labels'), cell);
    tr.addEventListener('mouseenter', () => chart?.setSeries(i + 1, { focus: true }));
    tr.addEventListener('mouseleave', () => chart?.setSeries(null, { focus: false }));
    return tr;
  });
  $('table').dataset.result = data.resultType;
  $('table').replaceChildren(rows.length ? table(['', 'Series', 'Last value'], rows) : empty());
  if (!series.length) return;

  const box = $('chart');
  box.hidden = false;
  const opts = {
    width: box.clientWidth,
    height: 360,
    legend: { show: false },
    cursor: { focus: { prox: 16 }, drag: { x: true, y: false } },
    focus: { alpha: 0.3 },
    scales: { x: { time: true } },
    series: [{}, ...series.map((s, i) => ({
      label: seriesName(s.metric),
      stroke: color(i),
      width: 1.5,
      points: { show: (u, si) => u.data[si].filter((v) => v != null).length < 3 },
    }))],
    axes: [{}, { size: 70 }],
    hooks: {
      setCursor: [(u) => {
        const idx = u.cursor.idx;
        const header = $('table').querySelector('th:last-child');
        if (header) header.textContent = idx == null ? 'Last value' : `Value at ${fmtTime(xs[idx])}`;
        valueCells.forEach((c, i) => {
          c.textContent = idx == null ? c.dataset.last : (ys[i][idx] ?? '');
        });
      }],
    },
  };
  chart = new uPlot(opts, [xs, ...ys], box);
  box.dataset.series = String(chart.series.length - 1);
  resizeObserver = new ResizeObserver(() => {
    if (chart && box.clientWidth && chart.width !== box.clientWidth) chart.setSize({ width: box.clientWidth, height: 360 });
  });
  resizeObserver.observe(box);
}

// ---- wiring -----------------------------------------------------------------------

$('query-form').addEventListener('submit', (e) => {
  e.preventDefault();
  run();
});
for (const b of document.querySelectorAll('[data-mode]')) {
  b.addEventListener('click', () => {
    state.q = editor.state.doc.toString();
    state.mode = b.dataset.mode;
    showState();
    run();
  });
}
$('now').addEventListener('click', () => {
  $('end').value = '';
  run();
});
$('range').addEventListener('input', updateStepPlaceholder);
for (const id of ['range', 'step', 'end']) {
  $(id).addEventListener('change', () => { if (editor.state.doc.length) run(); });
}
window.addEventListener('popstate', () => {
  readURL();
  showState();
  if (state.q) run(false);
});

// The server's version, in the header. buildinfo's version is the Prometheus
// API's (what Grafana reads); hbtsdb's own is in its branch, "hbtsdb-<version>".
fetch(`${base}/api/v1/status/buildinfo`).then((r) => r.json()).then((b) => {
  if (b.status !== 'success') return;
  const own = /^hbtsdb-(.+)$/.exec(b.data.branch || '');
  $('version').textContent = own ? own[1] : b.data.version;
  $('version').title = `Prometheus API ${b.data.version}, revision ${b.data.revision}, ${b.data.goVersion}`;
}).catch(() => {});

readURL();
showState();
if (state.q) run(false);
editor.focus();
