"""The page's own script and style (no library): the op table built from the embedded
JSON, sorted by a click on a column head, filtered by text and status, and each op's detail
(forest plot, flags, links, changed kernels, time split, TTGIR diff) drawn when opened."""

STYLE = """
body{font-family:system-ui,sans-serif;margin:1.2em;color:#222}
h1{font-size:1.35em}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.82em}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4}#ops th{cursor:pointer;user-select:none}
#ops td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
#ops tr.op:hover{background:#f5f9ff;cursor:pointer}
td.faster{color:#2e7d32;font-weight:bold}td.slower{color:#c62828;font-weight:bold}
.head td:first-child{font-weight:bold;white-space:nowrap}
.counts span{display:inline-block;margin-right:.8em;font-family:monospace}
.controls{margin:.6em 0}.controls input{width:22em}
.detail{background:#fafafa}.detail td{padding:.5em 1em}
.diff{font-family:monospace;font-size:11px;margin:.4em 0}
.diff td{white-space:pre;border:none;padding:0 4px}.diff td.n{color:#999;text-align:right}
.diff tr.ch td,.diff tr.del td,.diff tr.ins td{background:#fff3cd}
.diff tr.gap td{color:#999;text-align:center}.diff caption{text-align:left;font-weight:bold}
svg text{font-family:monospace;font-size:11px}.note{color:#555;font-size:.85em}
.flag{background:#eee;border-radius:3px;padding:0 .3em;margin-right:.3em;font-size:.85em}
.thr{color:#c62828}
"""

SCRIPT = r"""
(function () {
'use strict';
var data = JSON.parse(document.getElementById('data').textContent);
var ops = data.ops, COLS = data.cols, body = document.querySelector('#ops tbody');
var sortKey = null, sortDir = 1;
var NS = 'http://www.w3.org/2000/svg';

function fmt(v, signed) {
  if (v === null || v === undefined) return '-';
  if (typeof v !== 'number') return String(v);
  return signed ? (v > 0 ? '+' : '') + v.toFixed(2) : v.toFixed(1);
}
function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function direction(o) {            // the range decides: it must leave 0 on one side
  if (o.z || o.l === null || o.h === null) return '';
  return o.l > 0 ? 'faster' : o.h < 0 ? 'slower' : '';
}
function row(o) {
  var tr = el('tr', 'op');
  var range = o.l === null ? '-' : fmt(o.l, true) + ' ~ ' + fmt(o.h, true);
  var cells = [o.o, o.s, o.f, fmt(o.d, true), range, o.k, o.c, fmt(o.e), o.n, o.r];
  cells.forEach(function (c, j) {
    var td = el('td', (j === 3 || j === 4 || j === 7) ? 'num' : '', c);
    if (j === 3) td.className += ' ' + direction(o);
    tr.appendChild(td);
  });
  tr.addEventListener('click', function () { toggle(tr, o); });
  return tr;
}
function render() {
  var q = document.getElementById('filter').value.toLowerCase();
  var st = document.getElementById('status').value;
  var list = ops.filter(function (o) {
    var text = (o.o + ' ' + o.f + ' ' + o.n + ' ' + o.r).toLowerCase();
    return (!st || o.s === st) && (!q || text.indexOf(q) >= 0);
  });
  if (sortKey !== null) {
    list.sort(function (a, b) {
      var x = a[sortKey], y = b[sortKey];
      if (x === null || x === undefined) return 1;       // no value: last either way
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : x > y ? 1 : 0) * sortDir;
    });
  }
  var frag = document.createDocumentFragment();
  list.forEach(function (o) { frag.appendChild(row(o)); });
  body.textContent = '';
  body.appendChild(frag);
  document.getElementById('shown').textContent = list.length + ' of ' + ops.length + ' ops';
}
function forest(o) {               // per-shape intervals on the axis the page computed
  var S = o.D.shapes, ax = o.D.axis, left = 260, w = 420, rh = 16, top = 16;
  if (!S.length) return null;
  var svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('width', left + w + 20);
  svg.setAttribute('height', top + rh * S.length + 20);
  function x(v) {
    return left + (Math.min(Math.max(v, ax[0]), ax[1]) - ax[0]) / (ax[1] - ax[0]) * w;
  }
  function add(tag, attrs, title) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (title) {
      var t = document.createElementNS(NS, 'title');
      t.textContent = title;
      e.appendChild(t);
    }
    svg.appendChild(e);
    return e;
  }
  add('line', {x1: x(0), y1: top, x2: x(0), y2: top + rh * S.length, stroke: '#444'});
  add('text', {x: left, y: 11}).textContent = 'delta %, 95% interval; purple: clipped';
  S.forEach(function (s, i) {
    var y = top + i * rh + rh / 2, col = s[6] ? (s[1] > 0 ? '#2e7d32' : '#c62828') : '#757575';
    add('text', {x: left - 6, y: y + 4, 'text-anchor': 'end'}).textContent =
      (s[8] ? '! ' : '') + s[0].slice(0, 36);
    var tip = s[0] + ': ' + fmt(s[1], true) + '% [' + fmt(s[2], true) + ', ' + fmt(s[3], true) +
      '] A ' + fmt(s[4]) + ' ms B ' + fmt(s[5]) + ' ms' +
      (s[7].length ? ' flags ' + s[7].join(' ') : '') + (s[8] ? ' THROTTLED' : '');
    if (s[2] !== null && s[3] !== null) {
      add('line', {x1: x(s[2]), y1: y, x2: x(s[3]), y2: y, stroke: col, 'stroke-width': 2}, tip);
    }
    if (s[1] !== null) {
      var clip = s[1] < ax[0] || s[1] > ax[1] ||
        (s[2] !== null && (s[2] < ax[0] || s[3] > ax[1]));
      add('rect', {x: x(s[1]) - 3, y: y - 3, width: 6, height: 6,
                   fill: clip ? '#6a1b9a' : col}, tip);
    }
  });
  return svg;
}
function table(head, rows) {
  var t = el('table'), h = el('tr');
  head.forEach(function (c) { h.appendChild(el('th', '', c)); });
  t.appendChild(h);
  rows.forEach(function (r) {
    var tr = el('tr');
    r.forEach(function (c) {
      tr.appendChild(el('td', '', c === null || c === undefined ? '-' : String(c)));
    });
    t.appendChild(tr);
  });
  return t;
}
function kernels(D) {              // metadata A -> B of the measured kernels that changed
  var rows = D.kernels.map(function (k) {
    var r = [k.shape, k.kernel];
    D.meta.forEach(function (c) {
      var a = k.a[c] === undefined ? '-' : k.a[c], b = k.b[c] === undefined ? '-' : k.b[c];
      r.push(a === b ? a : a + ' → ' + b);
    });
    return r;
  });
  return table(['shape', 'kernel'].concat(D.meta), rows);
}
function detail(o) {
  var D = o.D, box = el('div');
  var head = o.s + (o.n ? ' — ' + o.n : '') + (o.r ? ' — reason: ' + o.r : '');
  box.appendChild(el('div', 'note', head));
  box.appendChild(forest(o) || el('div', 'note', 'no paired shapes to plot'));
  var flagged = D.shapes.filter(function (s) { return s[7].length || s[8]; });
  if (flagged.length) {
    box.appendChild(el('h4', '', 'flags and throttled marks'));
    box.appendChild(table(['shape', 'flags', 'clock'], flagged.map(function (s) {
      return [s[0], s[7].join(' '), s[8] ? 'throttled' : ''];
    })));
  }
  if (D.links.length) {
    var p = el('p', 'note', 'files: ');
    D.links.forEach(function (l) {
      var a = el('a', '', l[0]);
      a.href = l[1];
      p.appendChild(a);
      p.appendChild(document.createTextNode(' '));
    });
    box.appendChild(p);
  }
  if (D.kernels.length) {
    box.appendChild(el('h4', '', 'measured kernels whose code changed, A→B'));
    box.appendChild(kernels(D));
  }
  Object.keys(D.split).forEach(function (side) {
    var sp = D.split[side];
    box.appendChild(el('h4', '', 'device time per kernel (profiler pass), ' + side));
    box.appendChild(table(['case', 'kernel', 'calls', 'µs per op call', 'share'], sp.rows));
    box.appendChild(table(['case', 'sum of kernels µs', 'idle between kernels µs',
                           'device span µs', 'measured latency µs', 'latency set beside',
                           'gap % (latency - that) / latency'],
                          sp.sums));
  });
  if (D.extra) box.appendChild(el('pre', '', D.extra));
  if (D.diff_left_out) {
    box.appendChild(el('p', 'note', 'TTGIR diff left out of this page (its budget went to ' +
                                    'larger changes): see the TTGIR links above'));
  }
  if (D.diff) {                    // escaped when the page was made (diff.py)
    var d = el('div');
    d.innerHTML = D.diff;
    box.appendChild(el('h4', '', 'TTGIR A | B (scrubbed)'));
    box.appendChild(d);
  }
  return box;
}
function toggle(tr, o) {
  var next = tr.nextSibling;
  if (next && next.classList.contains('detail')) { next.remove(); return; }
  var d = el('tr', 'detail'), td = el('td');
  td.colSpan = COLS.length;
  td.appendChild(detail(o));
  d.appendChild(td);
  tr.parentNode.insertBefore(d, tr.nextSibling);
}
document.querySelectorAll('#ops th').forEach(function (th) {
  th.addEventListener('click', function () {
    var k = th.dataset.k;
    sortDir = sortKey === k ? -sortDir : 1;
    sortKey = k;
    render();
  });
});
document.getElementById('filter').addEventListener('input', render);
document.getElementById('status').addEventListener('change', render);
render();
})();
"""
