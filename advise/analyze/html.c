/* SPDX-License-Identifier: MIT */
/* advise/analyze/html.c -- the report as one self-contained HTML page
 * (--html FILE): nothing fetched, no external script, font or stylesheet;
 * the CSS and the script below are in the page.
 *
 * The page's data is one JSON object in a <script type="application/json">
 * element, written for the page alone: the --json report's figures, made
 * compact (a page of 10,000 sites must render in under 2 s; their --json
 * report is 19 MB, this data 4.7 MB):
 *   "generator"  memres-advise and its version
 *   "run"        the run's figures (the text report's head)
 *   "timeline"   the profile's timeline of live bytes (format.h), or null:
 *                {"peak": index, "interval_ns", "points": [[time_ns,
 *                allocations, live_bytes, live_objects], ...]}
 *   "columns"    the names of a site row's columns
 *   "sites"      one array per site, in the analysis' order; its frames
 *                as indices into "frames"; a histogram as [first bucket,
 *                counts...], the empty buckets at both ends left out
 *   "behind"     the pools behind one function
 *   "names"      every function, file and module name once
 *   "frames"     every distinct frame once: [function, file, line, module,
 *                offset, address], names as indices into "names" (-1:
 *                unknown)
 *   "plan"       the planned sites and the plan file's text, or null
 *   "measured"   measure's table as it wrote it, or null
 * Inside a script element the text must not hold "</script" nor "<!--":
 * every '<' in a string is written as \u003c (a JSON escape; '<' stands
 * nowhere else in JSON), which covers "</".
 *
 * The script renders from that object in one pass, each part's HTML built
 * as one string and set once: the summary and recommendations; the sites
 * table (fixed column widths, so that laying it out measures no cell),
 * sorted on a click on a column header and shown 100 rows a page; one
 * site's frames, figures, lifetime histograms (format.h's log2 buckets,
 * on the allocation clock and in time) and its most frequent sizes; a
 * flame graph (an icicle: outermost frame on top) of the sites' folded
 * stacks (fold.c's frames, as the report gives them) weighted by
 * allocations, bytes or glibc time, a click zooming into a frame; the
 * plan; the measured table; live bytes over time, an SVG line chart of
 * the timeline (axes in time and bytes, in units of the largest figure:
 * MiB from 1 MiB on), its peak marked and labelled (a profile without a
 * timeline, of version 4, gets a note instead).  When the script ends it lays the page
 * out, sets the title to "memres-advise: ok" and writes performance.now()
 * into #render-ms; an exception sets the title to "memres-advise: error
 * ..." (the tests load the page in headless Chromium and read both). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

#ifndef MEMRES_ADVISE_VERSION
# define MEMRES_ADVISE_VERSION "unknown"
#endif

/* The plan file's text kept in the page, at most. */
#define PLAN_TEXT_MAX (64u * 1024u)

static const char *const page_css[] = {
    "body{font:14px/1.4 system-ui,-apple-system,\"Segoe UI\",sans-serif;margin:0 24px "
        "40px;color:#222;background:#fff}",
    "h1{font-size:20px;margin:16px 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}",
    "h3{font-size:15px;margin:12px 0 6px}code,pre,.mono{font-family:ui-monospace,\"DejaVu Sans "
        "Mono\",monospace;font-size:12px}",
    "pre{background:#f6f6f6;padding:8px;overflow:auto;max-height:480px}",
    ".note{color:#666}.warn{color:#b00}",
    "table.sum td{padding:1px 12px 1px 0;vertical-align:top}table.sum "
        "td:first-child{color:#555;white-space:nowrap}",
    "table.sites{border-collapse:collapse;table-layout:fixed;width:1610px;font-size:12px}",
    "table.sites th{position:sticky;top:0;background:#eee;cursor:pointer;text-align:left;padding:3px "
        "6px;white-space:nowrap;",
    " overflow:hidden;text-overflow:ellipsis;user-select:none}",
    "table.sites th.num,table.sites td.num{text-align:right}",
    "table.sites td{padding:2px 6px;border-bottom:1px solid "
        "#f0f0f0;white-space:nowrap;max-width:360px;overflow:hidden;text-overflow:ellipsis}",
    "table.sites tr:hover td{background:#f4f8ff}table.sites tr.sel td{background:#dde9ff}",
    ".dot{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}",
    ".bar-row{display:flex;gap:8px;align-items:center;margin:6px 0;flex-wrap:wrap}",
    "button{font:inherit;padding:2px 10px;border:1px solid "
        "#aaa;background:#f8f8f8;border-radius:3px;cursor:pointer}",
    "button.on{background:#2a6fdb;color:#fff;border-color:#2a6fdb}",
    "#fg{position:relative;width:100%;overflow:hidden;border:1px solid #ddd;background:#fcfcfc}",
    ".fg{position:absolute;height:17px;box-sizing:border-box;border:1px solid "
        "#fff;font-size:11px;line-height:15px;",
    " padding:0 3px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;cursor:pointer;color:#111}",
    ".fg:hover{filter:brightness(1.12);border-color:#333}",
    ".hist{display:flex;align-items:flex-end;height:110px;gap:1px;border-bottom:1px solid #999;padding-top:4px}",
    ".hist div{background:#4a7fc1;flex:1;min-width:3px}.hist div:hover{background:#d62828}",
    ".axis{display:flex;justify-content:space-between;font-size:11px;color:#666}",
    ".charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:24px}",
    ".hbar{display:flex;align-items:center;font-size:12px;margin:2px 0}.hbar span{width:130px;flex:none}",
    ".hbar div{background:#e9a15a;height:12px;margin-right:6px}",
    "#detail{border:1px solid #ddd;padding:4px 14px 12px;margin-top:12px;background:#fdfdfd}",
    "ol.frames{margin:4px 0;padding-left:22px;font-size:12px}",
    "#livechart .grid{stroke:#eee}#livechart .axis-line{stroke:#999}#livechart text{font-size:11px;fill:#555}",
    "#livechart .yl{text-anchor:end}#livechart .xl,#livechart .xt,#livechart .yt{text-anchor:middle}",
    "#livechart .live-line{fill:none;stroke:#2a6fdb;stroke-width:1.5}#livechart .live-area{fill:#2a6fdb;"
        "fill-opacity:.12;stroke:none}",
    "#livechart .live-peak{fill:#d62828}#livechart .peak-label{fill:#d62828;font-weight:600}",
    "ul.recs{padding-left:18px;max-height:320px;overflow:auto;margin:4px 0}ul.recs li{cursor:pointer}ul.recs "
        "li:hover{text-decoration:underline}",
};

static const char *const page_js[] = {
    "(function () {",
    "\"use strict\";",
    "var D = JSON.parse(document.getElementById(\"data\").textContent);",
    "var R = D.run, NAME = D.names, COLS_IN = D.columns;",
    "/* the frame table: each distinct frame once, its label made once */",
    "var FR = D.frames.map(function (t, i) {",
    "  var f = { \"function\": t[0] < 0 ? null : NAME[t[0]], file: t[1] < 0 ? null : NAME[t[1]], line: t[2],",
    "            module: t[3] < 0 ? null : NAME[t[3]], offset: t[4], address: \"0x\" + t[5].toString(16), i: i };",
    "  f.label = fl(f);",
    "  return f;",
    "});",
    "/* a histogram as written, [first bucket, counts...], back to every bucket",
    "   from 0 to the last that holds something (for the one site shown) */",
    "function buckets(h) {",
    "  var out = [];",
    "  for (var b = 0; b < h[0]; b++) out.push(0);",
    "  return out.concat(h.slice(1));",
    "}",
    "/* each site's row into an object named by the columns: one object literal",
    "   of the page's own column names, so that every site has the same shape */",
    "var row = new Function(\"r\", \"return {\" + COLS_IN.map(function (c, k) {",
    "  if (!/^[a-z0-9_]+$/.test(c)) throw new Error(\"bad column \" + c);",
    "  return c + \": r[\" + k + \"]\";",
    "}).join(\", \") + \"};\");",
    "var S = D.sites.map(function (r) {",
    "  var s = row(r), f = s.frames;",
    "  for (var k = 0; k < f.length; k++) f[k] = FR[f[k]];",
    "  return s;",
    "});",
    "D.behind.forEach(function (b) { b.frame = FR[b.frame]; });",
    "function $(id) { return document.getElementById(id); }",
    "var ESC = { \"&\": \"&amp;\", \"<\": \"&lt;\", \">\": \"&gt;\", \"\\\"\": \"&quot;\", \"'\": \"&#39;\" };",
    "function esc(s) { return String(s == null ? \"\" : s).replace(/[&<>\"']/g, function (c) { return ESC[c]; }); "
        "}",
    "function base(p) { var i = p.lastIndexOf(\"/\"); return i < 0 ? p : p.slice(i + 1); }",
    "function ns(v) {",
    "  v = +v || 0; var a = Math.abs(v);",
    "  return a < 999.5 ? v.toFixed(0) + \" ns\" : a < 999950 ? (v / 1e3).toFixed(1) + \" us\" :",
    "         a < 1e9 ? (v / 1e6).toFixed(1) + \" ms\" : (v / 1e9).toFixed(2) + \" s\";",
    "}",
    "function by(v) {",
    "  v = +v || 0; var a = Math.abs(v);",
    "  return a < 10240 ? v.toFixed(0) + \" B\" : a < 10485760 ? (v / 1024).toFixed(1) + \" KiB\" :",
    "         a < 10737418240 ? (v / 1048576).toFixed(1) + \" MiB\" : (v / 1073741824).toFixed(1) + \" GiB\";",
    "}",
    "function cnt(v) { return String(Math.round(+v || 0)).replace(/\\B(?=(\\d{3})+(?!\\d))/g, \",\"); }",
    "function pct(v) { return (100 * (+v || 0)).toFixed(1) + \"%\"; }",
    "function runShare(v) { return R.run_time_ns > 0 ? v / R.run_time_ns : 0; }",
    "var COL = { \"arena\": \"#2a9d8f\", \"arena-rewind\": \"#7cb518\", \"objpool\": \"#e9c46a\", \"pools\": "
        "\"#f4a261\",",
    "            \"ts\": \"#d62828\", \"none\": \"#b8b8b8\" };",
    "function pooled(s) { return s.recommendation === \"pools\" || s.recommendation === \"objpool\"; }",
    "function recl(s) { return s.recommendation + (s.thread_safe && pooled(s) ? \" (thread-safe)\" : \"\"); }",
    "function colour(s) { return s.thread_safe && pooled(s) ? COL.ts : COL[s.recommendation] || COL.none; }",
    "function fl(f) {",
    "  var fn = f[\"function\"] || f.address;",
    "  if (f.file) return fn + \" \" + base(f.file) + \":\" + f.line;",
    "  if (f.module) return fn + (f[\"function\"] ? \"+0x\" + (+f.offset).toString(16) : \"\") + \" (\" + "
        "base(f.module) + \")\";",
    "  return fn;",
    "}",
    "function fullFrame(f) {",
    "  var fn = f[\"function\"] || f.address;",
    "  if (f.file) return fn + \" \" + f.file + \":\" + f.line;",
    "  return fl(f) + (f.module ? \" \" + f.module : \"\");",
    "}",
    "function first(s) { return s.frames.length ? s.frames[0] : null; }",
    "var byId = {};",
    "S.forEach(function (s, i) { byId[s.id] = i; });",
    "function siteLink(id) { return \"<a href=\\\"#site-\" + id + \"\\\" data-site=\\\"\" + id + \"\\\">#\" + id + "
        "\"</a>\"; }",
    "/* ---- summary ---- */",
    "var nrec = 0;",
    "S.forEach(function (s) { if (s.recommendation !== \"none\") nrec++; });",
    "var share = (100 * R.min_share).toFixed(2).replace(/\\.?0+$/, \"\");",
    "var rows = [",
    "  [\"program\", esc(R.program) + \" (pid \" + R.pid + \")\"],",
    "  [\"run time\", ns(R.run_time_ns) + \", the program's own (\" + ns(R.recorded_time_ns) +",
    "    \" under the recorder, less its sampled time in its hooks)\"],",
    "  [\"allocations\", cnt(R.allocations) + \" (\" + cnt(R.frees) + \" frees, \" + cnt(R.reallocs) + \" "
        "reallocs), \" +",
    "    by(R.bytes) + \" requested\"],",
    "  [\"peak live\", by(R.peak_live_bytes) + \" in \" + cnt(R.peak_live_objects) + \" objects; at exit \" +",
    "    by(R.live_bytes_at_exit) + \" in \" + cnt(R.live_objects_at_exit) + \" objects; \" + cnt(R.threads) + \" "
        "thread(s)\"],",
    "  [\"sites\", cnt(R.nsites) + \" call stacks of depth \" + R.depth +",
    "    (R.nsites > S.length ? \" (this report holds the first \" + cnt(S.length) + \")\" : \"\")],",
    "  [\"the \" + share + \"% rule\", \"a site is recommended only where its predicted saving is at least \" + "
        "share +",
    "    \"% of the run time (\" + ns(R.min_share * R.run_time_ns) + \")\"],",
    "  [\"recommended\", nrec + \" site\" + (nrec === 1 ? \"\" : \"s\") + \", predicted saving \" + "
        "ns(R.total_predicted_saving_ns) +",
    "    \" (\" + pct(runShare(R.total_predicted_saving_ns)) + \" of the run)\" +",
    "    (D.behind.length ? \"; pools behind \" + D.behind.length + \" function(s)\" : \"\")],",
    "  [\"costs\", esc(R.costs_machine || \"(not calibrated: savings are 0)\")],",
    "  [\"folded wrappers\", esc(R.folded.join(\", \") || \"none\")]",
    "];",
    "$(\"summary\").innerHTML = rows.map(function (r) { return \"<tr><td>\" + esc(r[0]) + \"</td><td>\" + r[1] + "
        "\"</td></tr>\"; }).join(\"\");",
    "var rec = [];",
    "S.forEach(function (s) {",
    "  if (s.recommendation === \"none\") return;",
    "  var f = first(s);",
    "  rec.push(\"<li data-site=\\\"\" + s.id + \"\\\"><span class=dot style=\\\"background:\" + colour(s) + "
        "\"\\\"></span>#\" + s.id +",
    "    \" <b>\" + esc(recl(s)) + \"</b> saves \" + ns(s.predicted_saving_ns) + \" (\" + "
        "pct(runShare(s.predicted_saving_ns)) +",
    "    \") at <span class=mono>\" + esc(f ? fl(f) : \"?\") + \"</span>\" + (s.retention_warning ? \" <span "
        "class=warn>retention warning</span>\" : \"\") + \"</li>\");",
    "});",
    "D.behind.forEach(function (b) {",
    "  rec.push(\"<li><b>pools\" + (b.thread_safe ? \" (thread-safe)\" : \"\") + \"</b> behind one function, \" + "
        "b.sites +",
    "    \" sites, saves \" + ns(b.predicted_saving_ns) + \" at <span class=mono>\" + esc(fl(b.frame)) + "
        "\"</span></li>\");",
    "});",
    "$(\"recs\").innerHTML = rec.length ? \"<ul class=recs>\" + rec.join(\"\") + \"</ul>\" :",
    "  \"<p>Nothing recommended: no site would save \" + share + \"% of the run.</p>\";",
    "/* ---- the sites table: sorted index, one page of rows built as one string ---- */",
    "function num(v) { return +v || 0; }",
    "var COLS = [",
    "  { h: \"#\", n: 1, k: function (s) { return s.id; }, f: function (s) { return s.id; } },",
    "  { h: \"recommended\", k: recl, f: function (s) { return \"<span class=dot style=\\\"background:\" + "
        "colour(s) + \"\\\"></span>\" + esc(recl(s)); } },",
    "  { h: \"function\", k: function (s) { var f = first(s); return f ? f[\"function\"] || f.address : \"\"; },",
    "    f: function (s) { var f = first(s); return esc(f ? f[\"function\"] || f.address : \"?\"); } },",
    "  { h: \"file:line\", k: function (s) { var f = first(s); return f && f.file ? base(f.file) + \":\" + f.line "
        ": \"\"; },",
    "    f: function (s) { var f = first(s); return f && f.file ? \"<span title=\\\"\" + esc(f.file) + \"\\\">\" + "
        "esc(base(f.file) + \":\" + f.line) + \"</span>\" : \"\"; } },",
    "  { h: \"allocations\", n: 1, k: function (s) { return num(s.allocations); }, f: function (s) { return "
        "cnt(s.allocations); } },",
    "  { h: \"bytes\", n: 1, k: function (s) { return num(s.bytes); }, f: function (s) { return by(s.bytes); } },",
    "  { h: \"predicted saving\", n: 1, k: function (s) { return num(s.predicted_saving_ns); },",
    "    f: function (s) { return s.predicted_saving_ns ? ns(s.predicted_saving_ns) + \" (\" + "
        "pct(runShare(s.predicted_saving_ns)) + \")\" : \"0\"; } },",
    "  { h: \"glibc time\", n: 1, k: function (s) { return num(s.glibc_ns); }, f: function (s) { return "
        "ns(s.glibc_ns); } },",
    "  { h: \"freed together\", n: 1, k: function (s) { return num(s.freed_together_share); }, f: function (s) { "
        "return pct(s.freed_together_share); } },",
    "  { h: \"stack-like\", n: 1, k: function (s) { return num(s.stack_like_share); }, f: function (s) { return "
        "pct(s.stack_like_share); } },",
    "  { h: \"remote\", n: 1, k: function (s) { return num(s.remote_share); }, f: function (s) { return "
        "pct(s.remote_share); } },",
    "  { h: \"lifetime (median, allocs)\", n: 1, k: function (s) { return num(s.median_ticks); }, f: function (s) "
        "{ return cnt(s.median_ticks); } },",
    "  { h: \"lifetime (median)\", n: 1, k: function (s) { return num(s.median_ns); }, f: function (s) { return "
        "ns(s.median_ns); } },",
    "  { h: \"peak live\", n: 1, k: function (s) { return num(s.peak_live_bytes); }, f: function (s) { return "
        "by(s.peak_live_bytes); } },",
    "  { h: \"never freed\", n: 1, k: function (s) { return num(s.never_freed_objects); }, f: function (s) { "
        "return cnt(s.never_freed_objects); } }",
    "];",
    "/* widths fixed in advance (table-layout: fixed): the browser lays the",
    "   table out without measuring every cell */",
    "var WIDTH = [50, 150, 190, 150, 95, 85, 130, 80, 105, 80, 65, 150, 110, 85, 85];",
    "var PAGE = 100;",
    "var T = { col: 0, dir: 1, page: 0, order: S.map(function (s, i) { return i; }), shown: null, filter: \"\", "
        "sel: -1 };",
    "var hay = null;",
    "function sortBy(c) {",
    "  var col = COLS[c], keys = S.map(col.k);",
    "  T.dir = T.col === c ? -T.dir : (col.n ? -1 : 1);",
    "  T.col = c;",
    "  var d = T.dir;",
    "  T.order.sort(function (a, b) {",
    "    var x = keys[a], y = keys[b];",
    "    return x < y ? -d : x > y ? d : a - b;",
    "  });",
    "  T.page = 0;",
    "  renderTable();",
    "}",
    "function renderHead() {",
    "  $(\"cols\").innerHTML = WIDTH.map(function (w) { return \"<col style=\\\"width:\" + w + \"px\\\">\"; "
        "}).join(\"\");",
    "  $(\"thead\").innerHTML = \"<tr>\" + COLS.map(function (c, i) {",
    "    var arrow = T.col === i ? (T.dir > 0 ? \" \\u25b2\" : \" \\u25bc\") : \"\";",
    "    return \"<th data-c=\\\"\" + i + \"\\\"\" + (c.n ? \" class=num\" : \"\") + \" title=\\\"sort by \" + "
        "esc(c.h) + \"\\\">\" + esc(c.h) + arrow + \"</th>\";",
    "  }).join(\"\") + \"</tr>\";",
    "}",
    "function renderTable() {",
    "  renderHead();",
    "  var list = T.order;",
    "  if (T.filter) {",
    "    if (!hay) hay = S.map(function (s) { return s.frames.map(fullFrame).join(\" \").toLowerCase() + \" \" + "
        "recl(s); });",
    "    var q = T.filter;",
    "    list = list.filter(function (i) { return hay[i].indexOf(q) >= 0; });",
    "  }",
    "  T.shown = list;",
    "  var pages = Math.max(1, Math.ceil(list.length / PAGE));",
    "  if (T.page >= pages) T.page = pages - 1;",
    "  var lo = T.page * PAGE, hi = Math.min(list.length, lo + PAGE), out = [];",
    "  for (var r = lo; r < hi; r++) {",
    "    var i = list[r], s = S[i];",
    "    out.push(\"<tr data-i=\\\"\" + i + \"\\\"\" + (i === T.sel ? \" class=sel\" : \"\") + \">\");",
    "    for (var c = 0; c < COLS.length; c++)",
    "      out.push(\"<td\" + (COLS[c].n ? \" class=num\" : \"\") + \">\" + COLS[c].f(s) + \"</td>\");",
    "    out.push(\"</tr>\");",
    "  }",
    "  $(\"tbody\").innerHTML = out.join(\"\");",
    "  $(\"pageinfo\").textContent = list.length ? \"sites \" + cnt(lo + 1) + \"\\u2013\" + cnt(hi) + \" of \" + "
        "cnt(list.length) +",
    "    (list.length < S.length ? \" (filtered from \" + cnt(S.length) + \")\" : \"\") : \"no site matches\";",
    "  $(\"prev\").disabled = T.page === 0;",
    "  $(\"next\").disabled = T.page >= pages - 1;",
    "}",
    "$(\"thead\").addEventListener(\"click\", function (e) {",
    "  var th = e.target.closest(\"th\");",
    "  if (th) sortBy(+th.getAttribute(\"data-c\"));",
    "});",
    "$(\"tbody\").addEventListener(\"click\", function (e) {",
    "  var tr = e.target.closest(\"tr\");",
    "  if (tr) select(+tr.getAttribute(\"data-i\"), false);",
    "});",
    "$(\"prev\").addEventListener(\"click\", function () { T.page--; renderTable(); });",
    "$(\"next\").addEventListener(\"click\", function () { T.page++; renderTable(); });",
    "var ft = null;",
    "$(\"filter\").addEventListener(\"input\", function (e) {",
    "  clearTimeout(ft);",
    "  var v = e.target.value.toLowerCase().trim();",
    "  ft = setTimeout(function () { T.filter = v; T.page = 0; renderTable(); }, 150);",
    "});",
    "/* ---- one site: frames, figures, lifetime and size histograms ---- */",
    "function hist(h, unit) {",
    "  var max = 0, i, out = [];",
    "  for (i = 0; i < h.length; i++) if (h[i] > max) max = h[i];",
    "  if (!max) return \"<p class=note>no frees: no lifetimes</p>\";",
    "  function lo(b) { return b === 0 ? 0 : Math.pow(2, b - 1); }",
    "  for (i = 0; i < h.length; i++) {",
    "    var label = i === 0 ? \"0\" : unit(lo(i)) + \" to \" + unit(Math.pow(2, i));",
    "    out.push(\"<div style=\\\"height:\" + (h[i] ? Math.max(1, 100 * h[i] / max) : 0).toFixed(1) + \"%\\\" "
        "title=\\\"\" +",
    "      esc(label + \": \" + cnt(h[i]) + \" frees\") + \"\\\"></div>\");",
    "  }",
    "  return \"<div class=hist>\" + out.join(\"\") + \"</div><div class=axis><span>\" + esc(unit(0)) + "
        "\"</span><span>\" +",
    "    esc(unit(Math.pow(2, h.length - 1))) + \"</span></div>\";",
    "}",
    "function sizes(s) {",
    "  var list = s.sizes.slice().sort(function (a, b) { return a[0] - b[0]; }), max = 0;",
    "  list.forEach(function (x) { if (x[1] > max) max = x[1]; });",
    "  if (s.other_sizes_count > max) max = s.other_sizes_count;",
    "  if (!max) return \"<p class=note>no allocations</p>\";",
    "  function bar(label, c) {",
    "    return \"<div class=hbar><span>\" + esc(label) + \"</span><div style=\\\"width:\" + (200 * c / "
        "max).toFixed(0) +",
    "      \"px\\\"></div>\" + cnt(c) + \"</div>\";",
    "  }",
    "  var out = list.map(function (x) { return bar(cnt(x[0]) + \" B\", x[1]); });",
    "  if (s.other_sizes_count) out.push(bar(\"other sizes\", s.other_sizes_count));",
    "  return out.join(\"\") + \"<p class=note>sizes \" + cnt(s.min_size) + \" to \" + cnt(s.max_size) + \" B; the "
        "\" +",
    "    s.sizes.length + \" most frequent kept per site\" + (s.other_sizes_count ? \", the rest as other sizes\" "
        ": \"\") + \"</p>\";",
    "}",
    "function select(i, scroll) {",
    "  T.sel = i;",
    "  var s = S[i], L = s;",
    "  Array.prototype.forEach.call(document.querySelectorAll(\"#tbody tr\"), function (tr) {",
    "    tr.className = +tr.getAttribute(\"data-i\") === i ? \"sel\" : \"\";",
    "  });",
    "  var h = \"<h3 id=\\\"site-\" + s.id + \"\\\"><span class=dot style=\\\"background:\" + colour(s) + "
        "\"\\\"></span>site #\" + s.id +",
    "    \": \" + esc(recl(s)) + (s.predicted_saving_ns ? \", saves \" + ns(s.predicted_saving_ns) + \" (\" +",
    "    pct(runShare(s.predicted_saving_ns)) + \" of the run)\" : \"\") + \"</h3><ol class=frames>\" +",
    "    s.frames.map(function (f) { return \"<li class=mono>\" + esc(fullFrame(f)) + \"</li>\"; }).join(\"\") + "
        "\"</ol><table class=sum>\";",
    "  var fig = [",
    "    [\"allocations\", cnt(s.allocations) + \" (\" + by(s.bytes) + \"), \" + cnt(s.frees) + \" frees\"],",
    "    [\"peak live\", cnt(s.peak_live_objects) + \" objects, \" + by(s.peak_live_bytes) + \"; never freed \" +",
    "      cnt(s.never_freed_objects) + \" (\" + by(s.never_freed_bytes) + \"); an arena of the site would peak at "
        "\" + by(s.arena_peak_bytes)],",
    "    [\"lifetime\", \"mean \" + cnt(L.mean_ticks) + \", median \" + cnt(L.median_ticks) + \", p90 \" + "
        "cnt(L.p90_ticks) +",
    "      \" allocations; mean \" + ns(L.mean_ns) + \", median \" + ns(L.median_ns) + \", p90 \" + ns(L.p90_ns)],",
    "    [\"frees\", pct(s.freed_together_share) + \" together, \" + pct(s.stack_like_share) + \" stack-like, \" +",
    "      pct(s.remote_share) + \" by another thread\"],",
    "    [\"reallocs\", cnt(s.reallocs) + \" (\" + cnt(s.realloc_moves) + \" moved, longest chain \" + "
        "cnt(s.realloc_chain_max) + \")\"],",
    "    [\"in glibc\", ns(s.glibc_ns) + \" (\" + cnt(s.glibc_samples) + \" timed samples, under the recorder)\"],",
    "    [\"reason\", esc(s.reason)]",
    "  ];",
    "  if (s.near) fig.push([\"near a threshold\", esc(s.near)]);",
    "  if (s.change) fig.push([\"change\", esc(s.change)]);",
    "  if (s.recommendation !== \"none\") {",
    "    fig.push([\"memory\", (s.memory_delta_bytes >= 0 ? \"+\" : \"\") + by(s.memory_delta_bytes) + \" "
        "(estimate)\" +",
    "      (s.retention_warning ? \" <span class=warn>retention warning: an arena of the whole site would hold far "
        "more than its peak live bytes</span>\" : \"\")]);",
    "    fig.push([\"sketch\", \"<pre>\" + esc(s.sketch.join(\"\\n\")) + \"</pre>\"]);",
    "  }",
    "  h += fig.map(function (r) { return \"<tr><td>\" + r[0] + \"</td><td>\" + r[1] + \"</td></tr>\"; "
        "}).join(\"\") + \"</table>\";",
    "  h += \"<div class=charts><div><h3>lifetime, on the allocation clock</h3>\" +",
    "    hist(buckets(L.hist_ticks), function (v) { return cnt(v) + \" allocs\"; }) + \"</div><div><h3>lifetime, "
        "in time</h3>\" +",
    "    hist(buckets(L.hist_ns), ns) + \"</div><div><h3>sizes</h3>\" + sizes(s) + \"</div></div>\";",
    "  $(\"detail\").innerHTML = h;",
    "  $(\"detail\").style.display = \"\";",
    "  if (scroll) $(\"detail\").scrollIntoView();",
    "}",
    "document.body.addEventListener(\"click\", function (e) {",
    "  var a = e.target.closest(\"[data-site]\");",
    "  if (!a || byId[a.getAttribute(\"data-site\")] === undefined) return;",
    "  e.preventDefault();",
    "  select(byId[a.getAttribute(\"data-site\")], true);",
    "});",
    "/* ---- the flame graph: the sites' folded stacks, outermost frame on top ---- */",
    "var MODES = [[\"allocations\", cnt], [\"bytes\", by], [\"glibc time\", ns]];",
    "var FG = { mode: 0, nodes: [], root: null };",
    "function fgNode(name, parent) {",
    "  var n = { name: name, v0: 0, v1: 0, v2: 0, kids: null, parent: parent, i: FG.nodes.length, site: null };",
    "  FG.nodes.push(n);",
    "  return n;",
    "}",
    "FG.root = fgNode(\"all sites\", null);",
    "S.forEach(function (s) {",
    "  var a = num(s.allocations), b = num(s.bytes), g = num(s.glibc_ns), n = FG.root;",
    "  n.v0 += a; n.v1 += b; n.v2 += g;",
    "  for (var f = s.frames.length - 1; f >= 0; f--) {",
    "    var fr = s.frames[f], c = n.kids ? n.kids.get(fr.i) : null;",
    "    if (!c) {",
    "      c = fgNode(fr.label, n);",
    "      if (!n.kids) n.kids = new Map();",
    "      n.kids.set(fr.i, c);",
    "    }",
    "    c.v0 += a; c.v1 += b; c.v2 += g;",
    "    n = c;",
    "  }",
    "  if (!n.site || num(n.site.allocations) < a) n.site = s;",
    "});",
    "FG.top = FG.root;",
    "/* a node's weight in mode m (three fields, not an array: one object less a node) */",
    "function val(n, m) { return m === 0 ? n.v0 : m === 1 ? n.v1 : n.v2; }",
    "function hue(name) {",
    "  var h = 0;",
    "  for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;",
    "  return \"hsl(\" + (20 + Math.abs(h) % 40) + \",80%,\" + (62 + Math.abs(h >> 8) % 14) + \"%)\";",
    "}",
    "function fgRender() {",
    "  /* the window's width, not the element's: reading a layout figure here",
    "     would lay the page out before its script ends */",
    "  var el = $(\"fg\"), W = Math.max(400, (window.innerWidth || 1280) - 50), m = FG.mode, top = FG.top, total = "
        "val(top, m), out = [], maxd = 0;",
    "  var fmt = MODES[m][1], all = val(FG.root, m);",
    "  function bar(n, x, w, d) {",
    "    if (d > maxd) maxd = d;",
    "    var col = n.site && n.site.recommendation !== \"none\" && !n.kids ? colour(n.site) : hue(n.name);",
    "    out.push(\"<div class=fg data-n=\\\"\" + n.i + \"\\\" style=\\\"left:\" + (100 * x).toFixed(4) + "
        "\"%;width:\" + (100 * w).toFixed(4) +",
    "      \"%;top:\" + (d * 18) + \"px;background:\" + col + \"\\\" title=\\\"\" + esc(n.name + \": \" + "
        "fmt(val(n, m)) + \" (\" +",
    "      pct(all > 0 ? val(n, m) / all : 0) + \")\" + (n.site ? \", site #\" + n.site.id + \" \" + recl(n.site) "
        ": \"\")) + \"\\\">\" +",
    "      (w * W > 24 ? esc(n.name) : \"\") + \"</div>\");",
    "  }",
    "  var chain = [];",
    "  for (var p = top.parent; p; p = p.parent) chain.unshift(p);",
    "  chain.forEach(function (a, d) { bar(a, 0, 1, d); });",
    "  function walk(n, x, w, d) {",
    "    bar(n, x, w, d);",
    "    if (!n.kids) return;",
    "    var kids = Array.from(n.kids.values()).sort(function (a, b) { return val(b, m) - val(a, m); }), cx = x;",
    "    for (var i = 0; i < kids.length; i++) {",
    "      var cw = total > 0 ? val(kids[i], m) / total : 0;",
    "      if (cw * W < 0.5) break;",
    "      walk(kids[i], cx, cw, d + 1);",
    "      cx += cw;",
    "    }",
    "  }",
    "  if (total > 0) walk(top, 0, 1, chain.length);",
    "  el.style.height = ((maxd + 1) * 18 + 2) + \"px\";",
    "  el.innerHTML = out.join(\"\");",
    "  $(\"fgnote\").textContent = total > 0 ? \"\" : \"no \" + MODES[m][0] + \" recorded\" + (m === 2 ? \" (no "
        "timed samples)\" : \"\");",
    "  $(\"fgmodes\").innerHTML = MODES.map(function (x, i) {",
    "    return \"<button data-mode=\\\"\" + i + \"\\\"\" + (i === m ? \" class=on\" : \"\") + \">\" + x[0] + "
        "\"</button>\";",
    "  }).join(\"\") + (top !== FG.root ? \" <button data-mode=\\\"reset\\\">whole graph</button>\" : \"\");",
    "}",
    "$(\"fgmodes\").addEventListener(\"click\", function (e) {",
    "  var b = e.target.closest(\"button\");",
    "  if (!b) return;",
    "  var v = b.getAttribute(\"data-mode\");",
    "  if (v === \"reset\") FG.top = FG.root; else FG.mode = +v;",
    "  fgRender();",
    "});",
    "$(\"fg\").addEventListener(\"click\", function (e) {",
    "  var d = e.target.closest(\".fg\");",
    "  if (!d) return;",
    "  var n = FG.nodes[+d.getAttribute(\"data-n\")];",
    "  if (!n.kids && n.site) select(byId[n.site.id], true);",
    "  else { FG.top = n; fgRender(); }",
    "});",
    "/* ---- the plan and the measurement ---- */",
    "var P = D.plan;",
    "if (P) {",
    "  var ph = \"<p>\" + P.sites.length + \" planned site\" + (P.sites.length === 1 ? \"\" : \"s\") + \" (\" + "
        "esc(P.mode) +",
    "    \"), predicted saving \" + ns(P.predicted_ns) + (P.path ? \", written to <code>\" + esc(P.path) + "
        "\"</code>\" : \"\") + \".</p>\";",
    "  if (P.sites.length) ph += \"<table class=sum><tr><td>site</td><td>allocator</td><td>predicted</td><td>glibc "
        "time</td></tr>\" +",
    "    P.sites.map(function (x) { return \"<tr><td>\" + siteLink(x.site) + \"</td><td>\" + esc(x.kind) + "
        "\"</td><td>\" +",
    "      ns(x.predicted_ns) + \"</td><td>\" + ns(x.glibc_ns) + \"</td></tr>\"; }).join(\"\") + \"</table>\";",
    "  if (P.text) ph += \"<details><summary>the plan file</summary><pre>\" + esc(P.text) + \"</pre></details>\";",
    "  $(\"plan\").innerHTML = ph;",
    "}",
    "if (D.measured) $(\"measured\").innerHTML = \"<pre>\" + esc(D.measured) + \"</pre>\";",
    "/* ---- live bytes over time: the timeline as an SVG line chart ---- */",
    "function niceStep(max, n) {",
    "  var raw = max / n, p = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10)), m = raw / p;",
    "  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;",
    "}",
    "function decimals(step) { return Math.max(0, -Math.floor(Math.log(step) / Math.LN10 + 1e-9)); }",
    "function liveChart(TL) {",
    "  var P = TL.points, pk = P[TL.peak], W = 920, H = 280, L = 70, RM = 20, TM = 16, BM = 40;",
    "  var tmax = P[P.length - 1][0] || 1, bmax = pk[2] || 1;",
    "  var yu = bmax >= 10737418240 ? [1073741824, \"GiB\"] : bmax >= 1048576 ? [1048576, \"MiB\"] : [1024, "
        "\"KiB\"];",
    "  var xu = tmax >= 1e9 ? [1e9, \"s\"] : tmax >= 1e6 ? [1e6, \"ms\"] : [1e3, \"us\"];",
    "  var ys = niceStep(bmax / yu[0], 5), xs = niceStep(tmax / xu[0], 8);",
    "  var ytop = Math.ceil(bmax / yu[0] / ys - 1e-9) * ys * yu[0];",
    "  if (!(ytop > 0)) ytop = bmax;",
    "  function X(t) { return (L + (W - L - RM) * t / tmax).toFixed(1); }",
    "  function Y(b) { return (TM + (H - TM - BM) * (1 - b / ytop)).toFixed(1); }",
    "  var o = [\"<svg id=livechart width=\\\"\" + W + \"\\\" height=\\\"\" + H +",
    "    \"\\\" viewBox=\\\"0 0 \" + W + \" \" + H + \"\\\" role=img aria-label=\\\"live bytes over time\\\">\"];",
    "  var v, yd = decimals(ys), xd = decimals(xs);",
    "  for (v = 0; v * yu[0] <= ytop * (1 + 1e-9); v += ys) {",
    "    var y = Y(v * yu[0]);",
    "    o.push(\"<line class=grid x1=\" + L + \" x2=\" + (W - RM) + \" y1=\" + y + \" y2=\" + y + \"></line>\" +",
    "      \"<text class=yl x=\" + (L - 6) + \" y=\" + y + \" dy=4>\" + v.toFixed(yd) + \"</text>\");",
    "  }",
    "  for (v = 0; v * xu[0] <= tmax * (1 + 1e-9); v += xs) {",
    "    var x = X(v * xu[0]);",
    "    o.push(\"<line class=grid x1=\" + x + \" x2=\" + x + \" y1=\" + TM + \" y2=\" + (H - BM) + \"></line>\" +",
    "      \"<text class=xl x=\" + x + \" y=\" + (H - BM + 16) + \">\" + v.toFixed(xd) + \"</text>\");",
    "  }",
    "  var line = P.map(function (q) { return X(q[0]) + \",\" + Y(q[2]); }).join(\" \");",
    "  o.push(\"<polygon class=live-area points=\\\"\" + X(0) + \",\" + Y(0) + \" \" + line + \" \" + X(tmax) "
        "+ \",\" + Y(0) +",
    "    \"\\\"></polygon><polyline class=live-line points=\\\"\" + line + \"\\\"></polyline>\");",
    "  o.push(\"<line class=axis-line x1=\" + L + \" x2=\" + L + \" y1=\" + TM + \" y2=\" + (H - BM) + "
        "\"></line>\" +",
    "    \"<line class=axis-line x1=\" + L + \" x2=\" + (W - RM) + \" y1=\" + (H - BM) + \" y2=\" + (H - BM) "
        "+ \"></line>\");",
    "  o.push(\"<text class=xt x=\" + ((L + W - RM) / 2) + \" y=\" + (H - 6) + \">time since start (\" + "
        "xu[1] + \")</text>\" +",
    "    \"<text class=yt transform=\\\"rotate(-90)\\\" x=\" + (-(TM + H - BM) / 2) + \" y=16>live (\" + "
        "yu[1] + \")</text>\");",
    "  var px = +X(pk[0]), py = +Y(pk[2]), right = px > W / 2;",
    "  var label = \"peak \" + by(pk[2]) + \" at \" + ns(pk[0]) + \", allocation \" + cnt(pk[1]);",
    "  o.push(\"<circle class=live-peak cx=\" + px + \" cy=\" + py + \" r=5><title>\" + esc(label + \", \" + "
        "cnt(pk[3]) +",
    "    \" objects\") + \"</title></circle><text class=peak-label x=\" + (right ? px - 9 : px + 9) + \" y=\" +",
    "    Math.max(TM + 10, py + 4) + \" text-anchor=\" + (right ? \"end\" : \"start\") + \">\" + esc(label) + "
        "\"</text>\");",
    "  o.push(\"</svg>\");",
    "  var last = P[P.length - 1];",
    "  return o.join(\"\") + \"<p class=note>\" + cnt(P.length) + \" points (one per \" + ns(TL.interval_ns) +",
    "    \" at most, sampled, the peak kept exactly); at exit \" + by(last[2]) + \" in \" + cnt(last[3]) +",
    "    \" objects after \" + cnt(last[1]) + \" allocations.</p>\";",
    "}",
    "var TL = D.timeline;",
    "if (TL && TL.points.length >= 2) {",
    "  $(\"live-chart\").innerHTML = liveChart(TL);",
    "} else {",
    "  $(\"live-chart\").innerHTML = \"<p class=note>This profile holds no timeline (it was recorded by a "
        "memres-advise\" +",
    "    \" whose profile had none). The program's peak: \" + by(R.peak_live_bytes) + \" in \" +",
    "    cnt(R.peak_live_objects) + \" objects; at exit \" + by(R.live_bytes_at_exit) + \".</p>\";",
    "}",
    "renderTable();",
    "fgRender();",
    "var firstRec = -1;",
    "S.forEach(function (s, i) { if (firstRec < 0 && s.recommendation !== \"none\") firstRec = i; });",
    "if (S.length) select(firstRec >= 0 ? firstRec : 0, false);",
    "/* the time to here, the page laid out (the figure the tests check) */",
    "document.body.getBoundingClientRect();",
    "var t = performance.now(), el = $(\"render-ms\");",
    "el.textContent = t.toFixed(0) + \" ms\";",
    "el.setAttribute(\"data-ms\", t.toFixed(1));",
    "document.title = \"memres-advise: ok\";",
    "})();",
};

static const char *const page_body[] = {
    "<h1>memres-advise report</h1>",
    "<p class=note>A self-contained page: its data and script are in it, nothing is fetched. "
    "<a href=\"#sites\">sites</a> &middot; <a href=\"#flame\">flame graph</a> &middot; "
    "<a href=\"#live\">live bytes</a> &middot; <a href=\"#plan-h\">plan</a> &middot; "
    "<a href=\"#measured-h\">measured</a></p>",
    "<h2>Summary</h2><table class=sum id=summary></table>",
    "<h3>Recommendations</h3><div id=recs></div>",
    "<h2 id=sites>Sites</h2>",
    "<p class=note>In the report's order (predicted saving, then bytes). Click a column header to sort by it "
    "(again: the other way), a row for the site's frames, figures and histograms.</p>",
    "<div class=bar-row><input id=filter size=40 placeholder=\"filter: function, file, module, allocator\">"
    "<button id=prev>previous</button><button id=next>next</button><span id=pageinfo></span></div>",
    "<div style=\"max-height:640px;overflow:auto\"><table class=sites><colgroup id=cols></colgroup>"
    "<thead id=thead></thead><tbody id=tbody></tbody></table></div>",
    "<div id=detail style=\"display:none\"></div>",
    "<h2 id=flame>Flame graph</h2>",
    "<p class=note>The sites' call stacks after folding (wrappers folded, recursion collapsed, --depth frames), "
    "the outermost frame on top, each frame as wide as its share. Click a frame to zoom into it, a "
    "site's innermost frame for its figures. Coloured by recommendation where a recommended site ends.</p>",
    "<div class=bar-row id=fgmodes></div><div id=fg></div><p class=note id=fgnote></p>",
    "<h2 id=live>Live bytes over time</h2>",
    "<p class=note>The program's requested bytes live (the recorder's count, not glibc's heap) against the time "
    "since the recorder started: sampled points, thinned to at most a thousand as the run grows, and the peak, "
    "kept exactly and marked.</p><div id=live-chart></div>",
    "<h2 id=plan-h>The plan</h2><div id=plan><p class=note>No plan was made: <code>--plan FILE</code> writes "
    "one, <code>--measure</code> makes one.</p></div>",
    "<h2 id=measured-h>Measured</h2><div id=measured><p class=note>Not measured: <code>--measure</code> runs the "
    "program on glibc and under the plan and measures the saving.</p></div>",
    "<p class=note>Rendered in <span id=render-ms>?</span> (performance.now() when the page was laid out at the end of "
    "its script).</p>",
};

static void put_lines(FILE *f, const char *const *lines, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fputs(lines[i], f);
        fputc('\n', f);
    }
}

/* s as a JSON string for the page's data: '"', '\\' and control
 * characters escaped, '<' as \u003c; other bytes as they are (the page is
 * UTF-8; a byte that starts no valid sequence shows as U+FFFD). */
static void data_string(FILE *f, const char *s, size_t max)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (size_t i = 0; s[i] && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == '<' || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* A number as short as it reads: whole numbers whole (below 2^53, where
 * a double holds them exactly), others to 4 digits; JSON has no NaN. */
static void data_num(FILE *f, double v)
{
    if (!isfinite(v))
        v = 0;
    if (fabs(v) < 9e15 && v == floor(v))
        fprintf(f, "%.0f", v);
    else
        fprintf(f, "%.4g", v);
}

/* ---- names and frames, each written once ---- */

/* Byte strings interned: each distinct key gets the next index. */
struct intern {
    char **key;                  /* by index: a copy, its length in front */
    size_t n, cap;
    size_t *slot;                /* open addressing: index + 1, 0 empty */
    size_t nslot;
};

static uint64_t key_hash(const void *k, size_t len)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < len; i++) {
        h ^= ((const unsigned char *)k)[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static bool key_is(const char *stored, const void *k, size_t len)
{
    size_t sl;
    memcpy(&sl, stored, sizeof sl);
    return sl == len && memcmp(stored + sizeof sl, k, len) == 0;
}

/* The index of the len bytes at k in t, added when new; -2 out of memory. */
static long intern(struct intern *t, const void *k, size_t len)
{
    if (2 * (t->n + 1) > t->nslot) {
        size_t ns = t->nslot ? 2 * t->nslot : 1024;
        size_t *slot = calloc(ns, sizeof *slot);
        if (!slot)
            return -2;
        for (size_t i = 0; i < t->n; i++) {
            size_t sl;
            memcpy(&sl, t->key[i], sizeof sl);
            size_t j = key_hash(t->key[i] + sizeof sl, sl) & (ns - 1);
            while (slot[j])
                j = (j + 1) & (ns - 1);
            slot[j] = i + 1;
        }
        free(t->slot);
        t->slot = slot;
        t->nslot = ns;
    }
    size_t j = key_hash(k, len) & (t->nslot - 1);
    for (; t->slot[j]; j = (j + 1) & (t->nslot - 1))
        if (key_is(t->key[t->slot[j] - 1], k, len))
            return (long)(t->slot[j] - 1);
    if (t->n == t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 256;
        char **nk = realloc(t->key, nc * sizeof *nk);
        if (!nk)
            return -2;
        t->key = nk;
        t->cap = nc;
    }
    char *copy = malloc(sizeof len + len + 1);
    if (!copy)
        return -2;
    memcpy(copy, &len, sizeof len);
    memcpy(copy + sizeof len, k, len);
    copy[sizeof len + len] = '\0';
    t->key[t->n] = copy;
    t->slot[j] = ++t->n;
    return (long)(t->n - 1);
}

static void intern_free(struct intern *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->key[i]);
    free(t->key);
    free(t->slot);
}

/* The page's tables: names (functions, files, modules) and frames. */
struct tables {
    struct intern names, frames;
};

/* A frame as written in "frames": its names as indices, -1 unknown. */
struct frame_key {
    long long function, file, line, module, offset, addr;
};

static long name_index(struct tables *t, const char *s)
{
    return s ? intern(&t->names, s, strlen(s)) : -1;
}

/* The index of fr in the frame table: 0.., or -1 out of memory. */
static long frame_index(struct tables *t, const struct mra_frame *fr)
{
    struct frame_key k = { .function = name_index(t, fr->function), .file = name_index(t, fr->file),
                           .line = fr->file ? fr->line : 0, .module = name_index(t, fr->module),
                           .offset = (long long)fr->offset, .addr = (long long)fr->addr };
    if (k.function == -2 || k.file == -2 || k.module == -2)
        return -1;
    long i = intern(&t->frames, &k, sizeof k);
    return i < 0 ? -1 : i;
}

/* Frame fr's index, written; 0, or -1 out of memory. */
static int data_frame(FILE *f, struct tables *t, const struct mra_frame *fr)
{
    long i = frame_index(t, fr);
    if (i < 0)
        return -1;
    fprintf(f, "%ld", i);
    return 0;
}

/* "names" and "frames", from the tables. */
static void data_tables(FILE *f, const struct tables *t)
{
    fputs("\"names\":[", f);
    for (size_t i = 0; i < t->names.n; i++) {
        fputs(i ? ",\n" : "\n", f);
        data_string(f, t->names.key[i] + sizeof(size_t), SIZE_MAX);
    }
    fputs("],\n\"frames\":[", f);
    for (size_t i = 0; i < t->frames.n; i++) {
        struct frame_key k;
        memcpy(&k, t->frames.key[i] + sizeof(size_t), sizeof k);
        fprintf(f, "%s[%lld,%lld,%lld,%lld,%lld,%lld]", i ? ",\n" : "\n", k.function, k.file, k.line, k.module,
                k.offset, k.addr);
    }
    fputc(']', f);
}

/* A log2 histogram as [first bucket, its count, the next's ...], the empty
 * buckets at both ends left out (lifetimes in ns start near 2^8); []
 * when every bucket is empty. */
static void data_hist(FILE *f, const uint64_t *h)
{
    unsigned lo = 0, hi = MRA_HIST;
    while (hi > 0 && !h[hi - 1])
        hi--;
    while (lo < hi && !h[lo])
        lo++;
    fputc('[', f);
    if (lo < hi)
        fprintf(f, "%u", lo);
    for (unsigned b = lo; b < hi; b++)
        fprintf(f, ",%llu", (unsigned long long)h[b]);
    fputc(']', f);
}

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0;
}

/* The names of a site row's columns, in the order data_site writes them. */
static const char site_columns[] =
    "\"id\",\"frames\",\"recommendation\",\"thread_safe\",\"allocations\",\"frees\",\"bytes\",\"sizes\","
    "\"other_sizes_count\",\"min_size\",\"max_size\",\"peak_live_objects\",\"peak_live_bytes\","
    "\"never_freed_objects\",\"never_freed_bytes\",\"arena_peak_bytes\",\"mean_ticks\",\"median_ticks\","
    "\"p90_ticks\",\"mean_ns\",\"median_ns\",\"p90_ns\",\"hist_ticks\",\"hist_ns\",\"freed_together_share\","
    "\"stack_like_share\",\"remote_share\",\"reallocs\",\"realloc_moves\",\"realloc_chain_max\",\"glibc_ns\","
    "\"glibc_samples\",\"predicted_saving_ns\",\"memory_delta_bytes\",\"retention_warning\",\"reason\",\"change\","
    "\"near\",\"sketch\"";

static int data_site(FILE *f, struct tables *t, const struct mra_site *s)
{
    const struct mra_site_stats *st = &s->s;
    fprintf(f, "[%u,[", s->id);
    for (unsigned k = 0; k < s->nframes; k++) {
        if (k)
            fputc(',', f);
        if (data_frame(f, t, &s->frames[k]) != 0)
            return -1;
    }
    const char *rec = mra_rec_name(s->rec);
    fprintf(f, "],\"%s\",%d,%llu,%llu,%llu,[", rec, s->thread_safe, (unsigned long long)st->allocations,
            (unsigned long long)st->frees, (unsigned long long)st->bytes);
    for (unsigned k = 0; k < st->nsizes && k < MRA_SIZES; k++)
        fprintf(f, "%s[%llu,%llu]", k ? "," : "", (unsigned long long)st->sizes[k].size,
                (unsigned long long)st->sizes[k].count);
    const uint64_t counts[] = { st->other_sizes_count, st->min_size,     st->max_size,     st->peak_live_objects,
                                st->peak_live_bytes,   st->live_objects, st->live_bytes,   st->arena_peak_bytes };
    fputc(']', f);
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
        fprintf(f, ",%llu", (unsigned long long)counts[k]);
    const double life[] = { ratio(st->lifetime_ticks_sum, st->frees), mra_hist_quantile(st->hist_ticks, 0.5),
                            mra_hist_quantile(st->hist_ticks, 0.9), ratio(st->lifetime_ns_sum, st->frees),
                            mra_hist_quantile(st->hist_ns, 0.5),    mra_hist_quantile(st->hist_ns, 0.9) };
    for (size_t k = 0; k < sizeof life / sizeof *life; k++) {
        fputc(',', f);
        data_num(f, life[k]);
    }
    fputc(',', f);
    data_hist(f, st->hist_ticks);
    fputc(',', f);
    data_hist(f, st->hist_ns);
    const double shares[] = { ratio(st->freed_together, st->frees), ratio(st->stack_like, st->frees),
                              ratio(st->remote_frees, st->frees) };
    for (size_t k = 0; k < 3; k++) {
        fputc(',', f);
        data_num(f, shares[k]);
    }
    fprintf(f, ",%llu,%llu,%llu,%llu,%llu,", (unsigned long long)st->reallocs, (unsigned long long)st->realloc_moves,
            (unsigned long long)st->realloc_chain_max, (unsigned long long)st->glibc_ns,
            (unsigned long long)st->glibc_samples);
    data_num(f, s->predicted_saving_ns);
    fprintf(f, ",%lld,%d,", (long long)s->memory_delta_bytes, s->retention_warning);
    data_string(f, s->reason, sizeof s->reason);
    fputc(',', f);
    data_string(f, s->change, sizeof s->change);
    fputc(',', f);
    data_string(f, s->near, sizeof s->near);
    /* the sketch where something is recommended: the page shows it there */
    if (s->rec != MRA_NONE) {
        fputs(",[", f);
        data_string(f, s->sketch[0], sizeof s->sketch[0]);
        fputc(',', f);
        data_string(f, s->sketch[1], sizeof s->sketch[1]);
        fputs("]]", f);
    } else {
        fputs(",null]", f);
    }
    return 0;
}

/* The run's figures, as the text report's head states them. */
static void data_run(FILE *f, const struct mra_analysis *a)
{
    const struct mra_profile_header *h = &a->h;
    fputs("{\"program\":", f);
    data_string(f, h->program, sizeof h->program);
    const struct {
        const char *name;
        double v;
    } nums[] = {
        { "pid", (double)h->pid },
        { "run_time_ns", a->program_ns },
        { "recorded_time_ns", a->recorded_ns },
        { "allocations", (double)h->allocations },
        { "frees", (double)h->frees },
        { "reallocs", (double)h->reallocs },
        { "bytes", (double)h->bytes },
        { "peak_live_bytes", (double)h->peak_live_bytes },
        { "peak_live_objects", (double)h->peak_live_objects },
        { "live_bytes_at_exit", (double)h->live_bytes_at_exit },
        { "live_objects_at_exit", (double)h->live_objects_at_exit },
        { "threads", (double)h->threads },
        { "depth", a->opts.depth },
        { "nsites", (double)a->nsites_total },
        { "min_share", a->opts.th.min_share },
        { "total_predicted_saving_ns", a->total_saving_ns },
    };
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        fprintf(f, ",\"%s\":", nums[i].name);
        data_num(f, nums[i].v);
    }
    fputs(",\"costs_machine\":", f);
    data_string(f, a->costs.machine, sizeof a->costs.machine);
    fputs(",\"folded\":[", f);
    for (size_t i = 0; i < a->nfolded; i++) {
        if (i)
            fputc(',', f);
        data_string(f, a->folded[i], SIZE_MAX);
    }
    fputs("]}", f);
}

/* The timeline: {"peak": index, "interval_ns": n, "points": [[time_ns,
 * allocations, live_bytes, live_objects], ...]}, or null. */
static void data_timeline(FILE *f, const struct mra_analysis *a)
{
    if (!a->tl.npoints) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"peak\":%u,\"interval_ns\":%llu,\"points\":[", a->tl.peak,
            (unsigned long long)a->tl.interval_ns);
    for (uint32_t i = 0; i < a->tl.npoints; i++) {
        const struct mra_timeline_point *q = &a->timeline[i];
        fprintf(f, "%s[%llu,%llu,%llu,%llu]", i ? "," : "", (unsigned long long)q->time_ns,
                (unsigned long long)q->allocations, (unsigned long long)q->live_bytes,
                (unsigned long long)q->live_objects);
    }
    fputs("]}", f);
}

char *mra_html_data(const struct mra_analysis *a)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    struct tables t = { 0 };
    int rc = 0;
    fputs("\"run\":", f);
    data_run(f, a);
    fputs(",\n\"timeline\":", f);
    data_timeline(f, a);
    fprintf(f, ",\n\"columns\":[%s],\n\"sites\":[", site_columns);
    for (size_t i = 0; i < a->nsites && rc == 0; i++) {
        fputs(i ? ",\n" : "\n", f);
        rc = data_site(f, &t, &a->sites[i]);
    }
    fputs("],\n\"behind\":[", f);
    for (size_t i = 0; i < a->nbehind && rc == 0; i++) {
        const struct mra_behind *b = &a->behind[i];
        fprintf(f, "%s{\"frame\":", i ? "," : "");
        rc = data_frame(f, &t, &b->frame);
        fprintf(f, ",\"sites\":%zu,\"allocations\":%llu,\"thread_safe\":%d,\"predicted_saving_ns\":", b->nsites,
                (unsigned long long)b->allocations, b->thread_safe);
        data_num(f, b->predicted_saving_ns);
        fputs(",\"reason\":", f);
        data_string(f, b->reason, sizeof b->reason);
        fputc('}', f);
    }
    /* the tables last: the sites and the behind entries filled them */
    fputs("],\n", f);
    data_tables(f, &t);
    intern_free(&t.names);
    intern_free(&t.frames);
    if (fclose(f) != 0 || rc != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The plan file's first PLAN_TEXT_MAX bytes, malloc'ed; NULL where it
 * cannot be read. */
static char *plan_text(const char *path)
{
    FILE *p = path ? fopen(path, "r") : NULL;
    if (!p)
        return NULL;
    char *t = malloc(PLAN_TEXT_MAX + 1);
    size_t n = t ? fread(t, 1, PLAN_TEXT_MAX, p) : 0;
    fclose(p);
    if (t)
        t[n] = '\0';
    return t;
}

static void data_plan(FILE *f, const struct mra_html_extra *x)
{
    const struct mra_planned *pl = x ? x->plan : NULL;
    if (!pl) {
        fputs("null", f);
        return;
    }
    fputs("{\"path\":", f);
    data_string(f, x->plan_kept ? x->plan_path : NULL, SIZE_MAX);
    fprintf(f, ",\"mode\":\"%s\",\"predicted_ns\":%.0f,\"sites\":[",
            pl->mode == MRA_PLAN_CANDIDATES ? "every candidate" : "the recommended sites", pl->predicted_ns);
    for (size_t i = 0; i < pl->n; i++)
        fprintf(f, "%s{\"site\":%u,\"kind\":\"%s\",\"predicted_ns\":%.0f,\"glibc_ns\":%.0f}", i ? "," : "",
                pl->s[i].site, mra_rec_name(pl->s[i].kind), pl->s[i].predicted_ns, pl->s[i].glibc_ns);
    fputs("],\"text\":", f);
    char *t = plan_text(x->plan_path);
    data_string(f, t, PLAN_TEXT_MAX);
    free(t);
    fputc('}', f);
}

int mra_html_write(FILE *f, const char *data, const struct mra_html_extra *x)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width\">\n<title>memres-advise: loading</title>\n"
          "<script>window.onerror = function (m, u, l) { document.title = \"memres-advise: error \" + m + "
          "\" (line \" + l + \")\"; };</script>\n<style>\n",
          f);
    put_lines(f, page_css, sizeof page_css / sizeof *page_css);
    fputs("</style></head>\n<body>\n", f);
    put_lines(f, page_body, sizeof page_body / sizeof *page_body);
    fputs("<script type=\"application/json\" id=\"data\">{\"generator\":\"memres-advise " MEMRES_ADVISE_VERSION "\",\n",
          f);
    fputs(data, f);
    fputs(",\n\"plan\":", f);
    data_plan(f, x);
    fputs(",\n\"measured\":", f);
    data_string(f, x ? x->measured : NULL, SIZE_MAX);
    fputs("}</script>\n<script>\n", f);
    put_lines(f, page_js, sizeof page_js / sizeof *page_js);
    fputs("</script>\n</body></html>\n", f);
    return ferror(f) ? -1 : 0;
}

int mra_report_html(FILE *f, const struct mra_analysis *a, const struct mra_html_extra *x)
{
    char *data = mra_html_data(a);
    if (!data) {
        fprintf(stderr, "memres-advise: out of memory writing the HTML page\n");
        return -1;
    }
    int rc = mra_html_write(f, data, x);
    free(data);
    return rc;
}
