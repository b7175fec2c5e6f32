// mcp-rl view: curves, a filterable list of episodes, one episode as a conversation, before/after.
// Served, it reads the server's JSON API and asks again every few seconds (a live run); written with
// --out, it reads the snapshot embedded in the file. Text from traces is only ever set as text, never
// as HTML: tool output is untrusted.
"use strict";
(() => {
  const PAGE = 50;
  const CHUNK = 20000;
  const POLL_MS = 2000;
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"];
  const dataNode = document.getElementById("viewer-data");
  const EMBEDDED = dataNode ? JSON.parse(dataNode.textContent) : null;

  // -- data: the server's API, or the embedded snapshot ---------------------------------------------
  async function get(url) {
    const response = await fetch(url);
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || response.statusText);
    return body;
  }
  const q = encodeURIComponent;
  const api = EMBEDDED ? {
    meta: async () => EMBEDDED.meta,
    metrics: async (since) => ({ generation: 0, items: EMBEDDED.metrics.slice(since) }),
    summaries: async (source, since) => {
      const all = EMBEDDED.summaries[source] || [];
      return { generation: 0, total: all.length, indexing: false, items: all.slice(since, since + CHUNK) };
    },
    episode: async (source, id) => {
      const record = (EMBEDDED.episodes[source] || {})[id];
      if (!record) throw new Error(`this file holds only the summary of episode ${id} (the last ${EMBEDDED.meta.max_episodes} of each list are whole); open the run with mcp-rl view to read it`);
      return record;
    },
    search: async (source, text) => {
      const needle = text.toLowerCase();
      const whole = EMBEDDED.episodes[source] || {};
      const ids = (EMBEDDED.summaries[source] || [])
        .filter((s) => JSON.stringify(whole[s.id] || s).toLowerCase().includes(needle)).map((s) => s.id);
      return { ids, complete: true };
    },
  } : {
    meta: () => get("/api/meta"),
    metrics: (since) => get(`/api/metrics?since=${since}`),
    summaries: (source, since) => get(`/api/summaries?source=${q(source)}&since=${since}&limit=${CHUNK}`),
    episode: (source, id) => get(`/api/episode?source=${q(source)}&id=${id}`),
    search: (source, text) => get(`/api/search?source=${q(source)}&q=${q(text)}`),
  };

  const state = {
    meta: null, metrics: [], metricsGeneration: null, sources: {},
    page: 0, searchIds: null, searchFor: "", searchComplete: true, selected: null, comparePage: 0,
  };

  // -- small DOM helpers --------------------------------------------------------------------------------
  const $ = (id) => document.getElementById(id);
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const fmt = (x, digits = 3) => (x === null || x === undefined ? "–" : Number.isInteger(x) ? String(x) : x.toFixed(digits));
  const short = (text, n = 120) => (text === null || text === undefined ? "" : text.length > n ? text.slice(0, n - 1) + "…" : text);

  // Text with each truncation marker (up to its closing bracket) highlighted.
  function marked(text) {
    const fragment = document.createDocumentFragment();
    const markers = (state.meta && state.meta.markers) || [];
    let rest = text || "";
    for (;;) {
      let at = -1;
      for (const marker of markers) {
        const i = rest.indexOf(marker);
        if (i >= 0 && (at < 0 || i < at)) at = i;
      }
      if (at < 0) break;
      const close = rest.indexOf("]", at);
      const end = close < 0 ? rest.length : close + 1;
      fragment.append(rest.slice(0, at), el("mark", { class: "cut", title: "the observation was cut here" }, rest.slice(at, end)));
      rest = rest.slice(end);
    }
    fragment.append(rest);
    return fragment;
  }

  // -- loading ----------------------------------------------------------------------------------------
  async function loadSource(name) {
    const source = state.sources[name] || (state.sources[name] = { items: [], generation: null, indexing: false });
    let changed = false;
    for (;;) {
      const reply = await api.summaries(name, source.items.length);
      if (source.generation !== null && reply.generation !== source.generation) {
        source.items = []; source.generation = reply.generation; changed = true; continue; // the file was replaced
      }
      source.generation = reply.generation;
      source.indexing = reply.indexing;
      for (const item of reply.items) source.items.push(item);
      if (reply.items.length) { changed = true; if (name === currentSource()) renderList(); }
      if (reply.items.length < CHUNK) return changed;
    }
  }

  async function loadMetrics() {
    const reply = await api.metrics(state.metricsGeneration === null ? 0 : state.metrics.length);
    if (state.metricsGeneration !== null && reply.generation !== state.metricsGeneration) {
      state.metrics = []; state.metricsGeneration = reply.generation; await loadMetrics(); return true;
    }
    state.metricsGeneration = reply.generation;
    state.metrics.push(...reply.items);
    return reply.items.length > 0;
  }

  async function refresh() {
    try {
      const meta = await api.meta();
      const first = state.meta === null;
      state.meta = meta;
      if (first) setUp();
      renderNotes();
      if (await loadMetrics() || first) renderCharts();
      let changed = false;
      for (const source of meta.sources) changed = (await loadSource(source.name)) || changed;
      if (changed || first) { renderFacets(); renderList(); renderCompare(); }
      if (first) openFromHash();
      renderStatus();
    } catch (error) {
      $("status").textContent = `cannot read the run: ${error.message} (trying again)`;
    }
    if (!EMBEDDED) {
      const busy = state.meta && state.meta.sources.some((s) => s.indexing);
      setTimeout(refresh, busy ? 400 : POLL_MS);
    }
  }

  function renderStatus() {
    const meta = state.meta;
    const train = state.sources.train ? state.sources.train.items : [];
    const steps = state.metrics.length ? state.metrics[state.metrics.length - 1].step : null;
    const parts = [`${train.length.toLocaleString()} training episodes`];
    if (steps !== null) parts.push(`last logged step ${steps}`);
    if (meta.sources.some((s) => s.indexing)) parts.push("reading the files…");
    parts.push(EMBEDDED ? `snapshot written ${meta.written}` : `live, read ${new Date().toLocaleTimeString()}`);
    $("status").textContent = parts.join(" · ");
  }

  function renderNotes() {
    const meta = state.meta;
    const lines = meta.notes.map((n) => el("div", {}, n));
    for (const error of meta.metrics.errors) lines.push(el("div", { class: "error" }, error));
    for (const source of meta.sources) {
      for (const error of source.errors) lines.push(el("div", { class: "error" }, error));
      if (source.error_count > source.errors.length) {
        lines.push(el("div", { class: "error" }, `… ${source.error_count - source.errors.length} more bad lines in ${source.files.join(", ")}`));
      }
    }
    $("notes").replaceChildren(...lines);
  }

  // -- curves -----------------------------------------------------------------------------------------
  // Each panel: a title and a function from the per-step rows to named series.
  function seriesOf(rows, pattern, labelOf) {
    const keys = new Set();
    for (const row of rows) for (const key of Object.keys(row)) if (pattern.test(key)) keys.add(key);
    return [...keys].sort().map((key) => ({ label: labelOf(key), values: rows.map((r) => (key in r ? r[key] : null)) }));
  }
  function named(rows, keys) {
    return keys.filter(([key]) => rows.some((r) => key in r))
      .map(([key, label]) => ({ label, values: rows.map((r) => (key in r ? r[key] : null)) }));
  }
  const PANELS = [
    ["Reward per function", (rows) => [...named(rows, [["reward", "total (weighted)"]]),
      ...seriesOf(rows, /^rewards\/.+\/mean$/, (k) => k.split("/")[1])]],
    ["Exact match (EM)", (rows) => named(rows, [["rewards/exact_match/mean", "exact match"]])],
    ["Tool calls per episode", (rows) => named(rows, [["rollout/calls_per_trajectory", "calls / episode"],
      ["rollout/turns_mean", "turns / episode"], ["rollout/answered", "answered"],
      ["rollout/truncated", "cut by a token limit"],
      ["rollout/parse_errors_per_trajectory", "parse errors / episode"]])],
    ["Failed calls by kind", (rows) => {
      const kinds = new Set();
      for (const row of rows) for (const key of Object.keys(row)) { const m = key.match(/^tools\/.+\/failures\/(.+)$/); if (m) kinds.add(m[1]); }
      return [...named(rows, [["tools/failures", "all kinds"]]), ...[...kinds].sort().map((kind) => ({
        label: kind.replace(/_/g, " "),
        values: rows.map((r) => ("tools/calls" in r ? Object.keys(r).filter((k) => k.endsWith(`/failures/${kind}`)).reduce((s, k) => s + r[k], 0) : null)),
      }))];
    }],
    ["Tool latency p50 / p95 (s)", (rows) => seriesOf(rows, /^tools\/.+\/latency_p(50|95)_s$/,
      (k) => k.replace(/^tools\//, "").replace(/\/latency_(p\d+)_s$/, " $1"))],
    ["Tokens per episode", (rows) => named(rows, [["rollout/model_tokens_mean", "model (in the loss)"],
      ["rollout/observation_tokens_mean", "observation (masked)"]])],
    ["Signal per step", (rows) => named(rows, [["frac_reward_zero_std", "episodes in groups without spread"],
      ["dynamic_sampling/zero_std_share", "groups without spread, as sampled"],
      ["grpo/informative_groups", "informative groups"], ["grpo/skipped_step", "step skipped"]])],
    ["Drift from the warm start", (rows) => named(rows, [["probe/kl", "KL on probe demonstrations"],
      ["probe/delta_logp", "Δ log-prob of probe demonstrations"], ["kl", "KL to the reference"],
      ["grpo/sft_loss", "token loss on the warm start's demonstrations"]])],
    ["Update size ‖Δθ‖ / lr", (rows) => named(rows, [["probe/update_norm_over_lr", "‖Δθ‖ / lr"]])],
    ["Search margin after the first passage", (rows) => seriesOf(rows, /^probe\/hops\/\d+\/search_margin$/,
      (k) => `${k.split("/")[2]} call(s): log p(search) − log p(answer)`)],
  ];
  // TRL's completion-length numbers count an episode as clipped unless its last token is EOS; ours end on a
  // stop string or an observation, so they read 1.0 (and "terminated" lengths are empty) on every step.
  const TRL_EOS_METRICS = /^completions\/(clipped_ratio|(mean|min|max)_terminated_length)$/;
  const metricLabel = (key) => (TRL_EOS_METRICS.test(key) ? `${key} (TRL: no EOS at the end; see rollout/truncated)` : key);
  let charts = [];
  let pickedMetric = "loss";

  function stepRows() {
    // One row per step (a step may log more than one line); lines of a training step only.
    const byStep = new Map();
    for (const row of state.metrics) byStep.set(row.step, Object.assign(byStep.get(row.step) || {}, row));
    return [...byStep.values()].sort((a, b) => a.step - b.step);
  }

  function chart(container, title, series, steps) {
    container.replaceChildren();
    const width = Math.max(300, container.clientWidth - 10);
    if (!series.length || !steps.length) {
      container.append(el("div", { class: "empty" }, `${title}: no data yet`));
      return null;
    }
    const options = {
      title, width, height: 230,
      // From 0 (or below) up: a flat line of zeros reads as zeros, not as the middle of an arbitrary range.
      scales: { x: { time: false }, y: { range: (u, min, max) => [Math.min(0, min), max > Math.min(0, min) ? max * 1.05 : 1] } },
      axes: [{ label: "step", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] }, {}],
      series: [{ label: "step" }, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true }))],
    };
    return new uPlot(options, [steps, ...series.map((s) => s.values)], container);
  }

  function renderCharts() {
    for (const c of charts) if (c) c.destroy();
    charts = [];
    const rows = stepRows();
    const steps = rows.map((r) => r.step);
    const box = $("charts");
    box.replaceChildren();
    for (const [title, make] of PANELS) {
      const series = make(rows);
      // A recipe without EM; a run without probes or a reference.
      if (!series.length && /^(Exact match|Drift|Update|Search margin)/.test(title)) continue;
      const container = el("div", { class: "chart" });
      box.append(container);
      charts.push(chart(container, title, series, steps));
    }
    // Any other logged number, picked by name.
    const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))].filter((k) => k !== "step" && k !== "time").sort();
    if (!keys.length) return;
    if (!keys.includes(pickedMetric)) pickedMetric = keys[0];
    const holder = el("div", { class: "chart" });
    const picker = el("select", { "aria-label": "metric", onchange: (e) => { pickedMetric = e.target.value; renderCharts(); } },
      keys.map((k) => el("option", { value: k, selected: k === pickedMetric }, metricLabel(k))));
    const inner = el("div");
    holder.append(picker, inner);
    box.append(holder);
    charts.push(chart(inner, metricLabel(pickedMetric), named(rows, [[pickedMetric, metricLabel(pickedMetric)]]), steps));
  }

  // -- the episode list -------------------------------------------------------------------------------
  const form = () => $("filters").elements;
  const currentSource = () => form().source.value || "train";
  const items = () => (state.sources[currentSource()] || { items: [] }).items;

  function setUp() {
    const meta = state.meta;
    $("run-name").textContent = [meta.run, meta.recipe_name && `recipe ${meta.recipe_name}`, meta.model && `model ${meta.model}`].filter(Boolean).join(" · ");
    document.title = `mcp-rl view · ${meta.run}`;
    form().source.replaceChildren(...meta.sources.map((s) => el("option", { value: s.name }, s.label)));
    $("recipe").textContent = meta.recipe_yaml || "no recipe.yaml in the run folder";
    $("filters").addEventListener("input", (event) => {
      if (event.target.name === "text") { scheduleSearch(); return; }
      if (event.target.name === "source") { state.searchIds = null; state.searchFor = ""; renderFacets(); scheduleSearch(); }
      if (event.target.name === "column") renderColumnValues();
      state.page = 0; renderList();
    });
    $("filters").addEventListener("reset", () => setTimeout(() => { state.searchIds = null; state.searchFor = ""; state.page = 0; renderFacets(); renderList(); }));
    $("filters").addEventListener("submit", (e) => e.preventDefault());
    $("prev").addEventListener("click", () => { state.page = Math.max(0, state.page - 1); renderList(); });
    $("next").addEventListener("click", () => { state.page += 1; renderList(); });
    $("compare-form").addEventListener("input", () => { state.comparePage = 0; renderCompare(); });
    $("compare-prev").addEventListener("click", () => { state.comparePage = Math.max(0, state.comparePage - 1); renderCompare(); });
    $("compare-next").addEventListener("click", () => { state.comparePage += 1; renderCompare(); });
    window.addEventListener("hashchange", openFromHash);
    window.addEventListener("resize", () => { clearTimeout(state.resizing); state.resizing = setTimeout(renderCharts, 200); });
  }

  function setOptions(select, values, keep) {
    const chosen = select.value;
    select.querySelectorAll("option:not([data-fixed])").forEach((o) => { if (!keep.includes(o.value)) o.remove(); });
    for (const value of values) select.append(el("option", { value }, value));
    select.value = [...select.options].some((o) => o.value === chosen) ? chosen : "";
  }

  function renderFacets() {
    const list = items();
    const f = form();
    const distinct = (get) => { const s = new Set(); for (const x of list) for (const v of [].concat(get(x))) if (v !== null && v !== undefined) s.add(String(v)); return [...s].sort(); };
    setOptions(f.rewardKey, distinct((x) => Object.keys(x.rewards)), [""]);
    setOptions(f.finish, distinct((x) => x.finish), [""]);
    setOptions(f.failure, distinct((x) => x.failures), ["", "__some__", "__none__"]);
    setOptions(f.tool, distinct((x) => Object.keys(x.calls_by_tool || {})), ["", "__none__"]);
    const hops = distinct((x) => x.hops).sort((a, b) => a - b);
    setOptions(f.hops, hops, [""]);
    f.hops.closest("label").hidden = !hops.length;
    setOptions(f.column, distinct((x) => Object.keys(x.columns)), [""]);
    renderColumnValues();
  }

  function renderColumnValues() {
    const column = form().column.value;
    const values = new Set();
    if (column) for (const x of items()) { const v = x.columns[column]; if (v !== null && v !== undefined) values.add(v); if (values.size >= 50) break; }
    $("column-values").replaceChildren(...[...values].sort().map((v) => el("option", { value: v })));
  }

  let searchTimer = null;
  function scheduleSearch() {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(async () => {
      const text = form().text.value.trim();
      state.searchFor = text;
      if (!text) { state.searchIds = null; state.page = 0; renderList(); return; }
      $("list-info").textContent = `searching for “${text}”…`;
      try {
        const found = await api.search(currentSource(), text);
        if (state.searchFor !== text) return; // a newer search started
        state.searchIds = new Set(found.ids);
        state.searchComplete = found.complete;
      } catch (error) { $("list-info").textContent = `search failed: ${error.message}`; return; }
      state.page = 0; renderList();
    }, 300);
  }

  function filtered() {
    const f = form();
    const num = (name) => (f[name].value === "" ? null : Number(f[name].value));
    const stepMin = num("stepMin"), stepMax = num("stepMax"), rMin = num("rewardMin"), rMax = num("rewardMax");
    const rewardKey = f.rewardKey.value, finish = f.finish.value, failure = f.failure.value, tool = f.tool.value;
    const hops = f.hops.value, column = f.column.value, columnValue = f.columnValue.value.toLowerCase();
    const ids = state.searchIds;
    const kept = items().filter((x) => {
      if (stepMin !== null && !(x.step >= stepMin)) return false;
      if (stepMax !== null && !(x.step <= stepMax)) return false;
      const r = rewardKey ? x.rewards[rewardKey] : x.reward;
      if (rMin !== null && !(r !== null && r !== undefined && r >= rMin)) return false;
      if (rMax !== null && !(r !== null && r !== undefined && r <= rMax)) return false;
      if (finish && x.finish !== finish) return false;
      if (failure === "__some__" ? !x.failures.length : failure === "__none__" ? x.failures.length : failure && !x.failures.includes(failure)) return false;
      if (tool === "__none__" ? x.calls : tool && !(tool in (x.calls_by_tool || {}))) return false;
      if (hops && String(x.hops) !== hops) return false;
      if (column && columnValue && !String(x.columns[column] ?? "").toLowerCase().includes(columnValue)) return false;
      return !(ids && !ids.has(x.id));
    });
    const sort = f.sort.value;
    const reward = (x) => (x.reward === null || x.reward === undefined ? -Infinity : x.reward);
    const by = {
      "step-desc": (a, b) => (b.step ?? 0) - (a.step ?? 0) || b.id - a.id,
      "step-asc": (a, b) => (a.step ?? 0) - (b.step ?? 0) || a.id - b.id,
      "reward-desc": (a, b) => reward(b) - reward(a) || a.id - b.id,
      "reward-asc": (a, b) => reward(a) - reward(b) || a.id - b.id,
    }[sort];
    return kept.sort(by);
  }

  // "called calculate ×2, search" from {tool name: calls}: named by the tools the episode really called.
  function calledText(byTool, none = "called no tool") {
    const entries = Object.entries(byTool || {});
    if (!entries.length) return none;
    return "called " + entries.map(([name, n]) => (n > 1 ? `${name} ×${n}` : name)).join(", ");
  }

  function failureBadges(x) {
    return [...x.failures.map((k) => el("span", { class: "badge fail" }, k)), x.truncated ? el("span", { class: "badge cut", title: "an observation was truncated" }, "cut") : null];
  }

  function renderList() {
    if (!state.meta) return;
    const all = items();
    const rows = filtered();
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const shown = rows.slice(state.page * PAGE, (state.page + 1) * PAGE);
    const source = state.sources[currentSource()] || {};
    $("list-info").textContent = `${rows.length.toLocaleString()} of ${all.length.toLocaleString()} episodes match` +
      (source.indexing ? " (still reading the file)" : "") + (state.searchFor ? ` · text “${state.searchFor}”` : "") +
      (state.searchFor && !state.searchComplete ? " (the search stopped at its time limit: not every episode was read)" : "");
    $("page-info").textContent = `page ${state.page + 1} of ${pages}`;
    $("list").tBodies[0].replaceChildren(...shown.map((x) => el("tr", {
      tabindex: 0, "data-id": x.id, class: state.selected && state.selected.source === currentSource() && state.selected.id === x.id ? "selected" : null,
      onclick: () => openEpisode(currentSource(), x.id),
      onkeydown: (e) => { if (e.key === "Enter") openEpisode(currentSource(), x.id); },
    },
      el("td", {}, x.id), el("td", {}, x.step ?? "–"), el("td", { title: x.question || "" }, x.question || ""),
      el("td", { title: x.answer || "" }, x.answer ?? "(none)"), el("td", { title: x.golden || "" }, x.golden || ""),
      el("td", {}, fmt(x.reward, 2)), el("td", { title: calledText(x.calls_by_tool) }, calledText(x.calls_by_tool, "")),
      el("td", {}, failureBadges(x)), el("td", {}, x.finish || ""))));
  }

  // -- one episode ------------------------------------------------------------------------------------
  const episodeHash = (source, id) => `#episode=${encodeURIComponent(source)}/${id}`;

  // The episode a URL fragment names (#episode=train/12), or null.
  function hashEpisode() {
    const match = location.hash.match(/^#episode=([^/]+)\/(\d+)$/);
    return match ? { source: decodeURIComponent(match[1]), id: Number(match[2]) } : null;
  }

  function openFromHash() {
    const wanted = hashEpisode();
    if (!wanted || !state.meta || !state.meta.sources.some((s) => s.name === wanted.source)) return;
    if (state.selected && state.selected.source === wanted.source && state.selected.id === wanted.id) return;
    if (form().source.value !== wanted.source) { form().source.value = wanted.source; renderFacets(); }
    openEpisode(wanted.source, wanted.id);
  }

  async function openEpisode(source, id) {
    state.selected = { source, id };
    if (location.hash !== episodeHash(source, id)) location.hash = episodeHash(source, id); // back: the one before
    renderList();
    const section = $("episode");
    section.hidden = false;
    $("episode-title").replaceChildren(el("a", { href: episodeHash(source, id), title: "a link to this episode" }, `#${id}`),
      source === "train" ? "" : ` (${(state.meta.sources.find((s) => s.name === source) || {}).label || source})`);
    $("conversation").replaceChildren(el("p", {}, "loading…"));
    try {
      const record = await api.episode(source, id);
      $("conversation").replaceChildren(conversation(record));
    } catch (error) {
      $("conversation").replaceChildren(el("p", { class: "notes" }, error.message));
    }
    section.scrollIntoView({ block: "start" });
  }

  function kvTable(entries) {
    return el("table", { class: "kv" }, entries.map(([k, v]) => el("tr", {}, el("td", {}, k), el("td", {}, v))));
  }

  function conversation(record) {
    const row = record.row || {};
    const question = record.question ?? row.question ?? record.task;
    const prompt = record.user_prompt ?? record.task ?? question;
    const golden = record.golden_answers ?? row.golden_answers;
    const rewards = record.rewards || {};
    const turns = record.turns || [];
    const calls = turns.flatMap((t) => t.calls || []);
    const total = record.reward ?? null;
    const head = [record.step !== undefined ? `step ${record.step}` : null, `finished by ${record.finish_reason}`,
      `${turns.length} turns`, calledText(calls.reduce((by, c) => ({ ...by, [c.name]: (by[c.name] || 0) + 1 }), {})),
      total !== null ? `reward ${fmt(total)}` : null].filter(Boolean).join(" · ");
    const parts = [el("p", { class: "info" }, head),
      el("div", { class: "block masked task" }, el("div", { class: "label" }, "user prompt (prompt.user_template filled with the row; in the prompt: not trained on)"),
        el("pre", {}, prompt ?? ""))];
    turns.forEach((turn, i) => {
      parts.push(el("div", { class: "block model" },
        el("div", { class: "label" }, `model turn ${i + 1} · ${turn.generated_tokens ?? "?"} tokens · in the loss`),
        el("pre", {}, turn.text)));
      for (const error of turn.parse_errors || []) parts.push(el("div", { class: "parse-error" }, `parse error: ${error}`));
      for (const call of turn.calls || []) {
        const status = call.failure ? el("span", { class: "badge fail" }, `failed: ${call.failure}`) : el("span", { class: "badge ok" }, "ok");
        parts.push(el("div", { class: "call" },
          el("code", {}, `${call.name}(${JSON.stringify(call.arguments)})`), " ", status,
          el("span", { class: "badge" }, `${Math.round((call.latency_s || 0) * 1000)} ms`),
          el("details", {}, el("summary", {}, `tool output (${(call.observation || "").length} characters)`), el("pre", {}, marked(call.observation)))));
      }
      if (turn.observation !== null && turn.observation !== undefined) {
        parts.push(el("div", { class: "block masked" },
          el("div", { class: "label" }, `observation · ${turn.observation_tokens ?? "?"} tokens · masked out of the loss`),
          el("pre", {}, marked(turn.observation))));
      }
    });
    const em = rewards.exact_match ?? record.em;
    const verdict = em === undefined || em === null ? null : el("span", { class: em > 0 ? "badge ok" : "badge fail" }, em > 0 ? "matches the reference" : "does not match");
    parts.push(el("div", { class: "final" },
      kvTable([["answer", el("b", {}, record.answer ?? "(no answer)")], ["reference", golden === undefined ? "–" : JSON.stringify(golden)], ["", verdict]]),
      kvTable([...Object.entries(rewards).map(([k, v]) => [`reward ${k}`, fmt(v)]), ...(total !== null ? [["total", fmt(total)]] : [])])));
    parts.push(el("details", {}, el("summary", {}, "dataset row"), kvTable(Object.entries(row).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]))));
    return el("div", {}, parts);
  }

  // -- before / after ---------------------------------------------------------------------------------
  function renderCompare() {
    const evals = state.meta.sources.filter((s) => s.kind === "eval");
    const section = $("compare");
    section.hidden = evals.length < 2;
    if (section.hidden) return;
    const f = $("compare-form").elements;
    for (const [select, fallback] of [[f.a, evals[0]], [f.b, evals[evals.length - 1]]]) {
      if (!select.options.length) {
        select.replaceChildren(...evals.map((s) => el("option", { value: s.name }, s.label)));
        select.value = fallback.name;
      }
    }
    const [a, b] = [f.a.value, f.b.value];
    const reports = [a, b].map((name) => evals.find((s) => s.name === name).report || {});
    const keys = [...new Set(reports.flatMap((r) => Object.keys(r)))].filter((k) => typeof (reports[0][k] ?? reports[1][k]) === "number");
    const rewardKeys = [...new Set(reports.flatMap((r) => Object.keys(r.rewards || {})))];
    // Sampled reports: pass@k of each 0/1 reward ({name: {k: value}}), k in numeric order.
    const passKeys = [...new Set(reports.flatMap((r) => Object.entries(r.pass_at_k || {})
      .flatMap(([name, byK]) => Object.keys(byK).map((k) => JSON.stringify([name, Number(k)])))))]
      .map((key) => JSON.parse(key)).sort((x, y) => x[0].localeCompare(y[0]) || x[1] - y[1]);
    const passAt = (r, [name, k]) => ((r.pass_at_k || {})[name] || {})[k];
    $("compare-reports").replaceChildren(kvTable([["", el("b", {}, "before · after")],
      ...keys.map((k) => [k, `${fmt(reports[0][k])} · ${fmt(reports[1][k])}`]),
      ...rewardKeys.map((k) => [`reward ${k}`, `${fmt((reports[0].rewards || {})[k])} · ${fmt((reports[1].rewards || {})[k])}`]),
      ...passKeys.map((key) => [`pass@${key[1]} ${key[0]}`, `${fmt(passAt(reports[0], key))} · ${fmt(passAt(reports[1], key))}`])]));
    const after = new Map((state.sources[b] || { items: [] }).items.map((x) => [x.key, x]));
    const score = (x) => x.reward ?? -Infinity;
    const pairs = (state.sources[a] || { items: [] }).items.filter((x) => after.has(x.key)).map((x) => [x, after.get(x.key)])
      .filter(([x, y]) => ({ all: true, changed: score(x) !== score(y), better: score(y) > score(x), worse: score(y) < score(x) })[f.show.value]);
    const pages = Math.max(1, Math.ceil(pairs.length / PAGE));
    state.comparePage = Math.min(state.comparePage, pages - 1);
    $("compare-page").textContent = `${pairs.length} tasks in both · page ${state.comparePage + 1} of ${pages}`;
    $("compare-list").tBodies[0].replaceChildren(...pairs.slice(state.comparePage * PAGE, (state.comparePage + 1) * PAGE).map(([x, y]) => {
      const cls = score(y) > score(x) ? "better" : score(y) < score(x) ? "worse" : "";
      return el("tr", { tabindex: 0, onclick: () => openPair(a, x.id, b, y.id) },
        el("td", { title: x.question || "" }, x.question || x.key), el("td", {}, x.golden || ""),
        el("td", { title: x.answer || "" }, x.answer ?? "(none)"), el("td", {}, fmt(x.reward, 2)),
        el("td", { title: y.answer || "", class: cls }, y.answer ?? "(none)"), el("td", { class: cls }, fmt(y.reward, 2)));
    }));
  }

  async function openPair(a, idA, b, idB) {
    const pair = $("pair");
    pair.replaceChildren(el("p", {}, "loading…"));
    try {
      const [x, y] = await Promise.all([api.episode(a, idA), api.episode(b, idB)]);
      pair.replaceChildren(el("div", {}, el("h3", {}, "before"), conversation(x)), el("div", {}, el("h3", {}, "after"), conversation(y)));
    } catch (error) {
      pair.replaceChildren(el("p", {}, error.message));
    }
    pair.scrollIntoView({ block: "start" });
  }

  refresh();
})();
