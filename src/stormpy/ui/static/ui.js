// stormpy UI: fills the pages from the REST API (/api/v1) and refreshes them in place.
// Shipped inside the stormpy package; loads nothing from elsewhere.
(function () {
  "use strict";
  const body = document.body;
  const page = body.dataset.page;
  const params = new URLSearchParams(location.search);
  const refreshMs = Math.max(500, 1000 * parseFloat(body.dataset.refresh || "3"));
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const tokenInput = document.getElementById("ui-token");
  const windowSelect = document.getElementById("window");
  tokenInput.value = sessionStorage.getItem("stormpy-ui-token") || "";
  tokenInput.addEventListener("change", () => { sessionStorage.setItem("stormpy-ui-token", tokenInput.value); refresh(); });
  windowSelect.value = params.get("window") || "600";
  windowSelect.addEventListener("change", () => { params.set("window", windowSelect.value); history.replaceState(null, "", "?" + params); refresh(); });

  function headers(extra) {
    const h = Object.assign({"Accept": "application/json"}, extra || {});
    if (tokenInput.value) h["Authorization"] = "Bearer " + tokenInput.value;
    return h;
  }
  async function api(path, options) {
    const response = await fetch(path, Object.assign({headers: headers(), credentials: "same-origin"}, options || {}));
    const text = await response.text();
    let doc = null;
    try { doc = text ? JSON.parse(text) : null; } catch (e) { doc = text; }
    if (!response.ok) {
      const message = doc && doc.errorMessage ? doc.errorMessage : response.status + " " + response.statusText;
      const err = new Error(message); err.status = response.status; throw err;
    }
    return doc;
  }
  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  // columns: [header, key or function(row) -> value, {num, link(row), cls(row)}]
  function table(id, columns, rows) {
    const t = document.getElementById(id);
    if (!t) return;
    const fresh = document.createDocumentFragment();
    const head = el("tr");
    for (const [label] of columns) head.appendChild(el("th", {}, label));
    fresh.appendChild(head);
    for (const row of rows) {
      const tr = el("tr");
      for (const [, key, opts] of columns) {
        const o = opts || {};
        const value = typeof key === "function" ? key(row) : row[key];
        const td = el("td", {class: (o.num ? "num " : "") + (o.cls ? o.cls(row) : "")});
        if (o.link && value !== undefined && value !== null) {
          td.appendChild(el("a", {href: o.link(row)}, value));
        } else {
          td.textContent = value === undefined || value === null ? "" : String(value);
        }
        tr.appendChild(td);
      }
      fresh.appendChild(tr);
    }
    t.replaceChildren(fresh);
  }
  function kv(id, doc, keys) {
    table(id, keys.map(k => [k, k]), [doc]);
  }
  const win = () => encodeURIComponent(windowSelect.value);
  // capacity cells coloured like the graph's boxes (green < 0.5, amber < 0.8, red from 0.8)
  const capClass = (r) => r.capacity === undefined ? "" : "cap " + (parseFloat(r.capacity) < 0.5 ? "low" : parseFloat(r.capacity) < 0.8 ? "mid" : "high");
  const statsCols = (kind) => kind === "spout"
    ? [["Emitted", "emitted", {num: 1}], ["Transferred", "transferred", {num: 1}], ["Complete latency (ms)", "completeLatency", {num: 1}], ["Acked", "acked", {num: 1}], ["Failed", "failed", {num: 1}]]
    : [["Emitted", "emitted", {num: 1}], ["Transferred", "transferred", {num: 1}], ["Capacity", "capacity", {num: 1, cls: capClass}], ["Execute latency (ms)", "executeLatency", {num: 1}], ["Executed", "executed", {num: 1}], ["Process latency (ms)", "processLatency", {num: 1}], ["Acked", "acked", {num: 1}], ["Failed", "failed", {num: 1}]];
  const errorCell = ["Last error", "lastError", {cls: () => "error"}];
  // the worker's log on its host's log server (absent when its supervisor runs none)
  const logCell = ["Log", r => r.workerLogLink ? "log" : null, {link: r => r.workerLogLink}];
  // Storm's profiling actions: a stack dump, heap summary or sampled CPU profile of one worker,
  // shown by its log server. The CPU profile is started, then its result polled until it is done.
  const CPU_PROFILE_SECS = 10;
  async function profileOf(tid, kind, hostPort) {
    const base = "/api/v1/topology/" + encodeURIComponent(tid) + "/profiling/";
    const post = {method: "POST", body: "", headers: headers({"X-CSRF-Token": csrf})};
    if (kind !== "cpu") return api(base + kind + "/" + encodeURIComponent(hostPort), post);
    const started = await api(base + "start/" + encodeURIComponent(hostPort) + "/" + CPU_PROFILE_SECS, post);
    for (;;) {
      await new Promise(r => setTimeout(r, 1000));
      const doc = await api(base + "result/" + encodeURIComponent(started.request));
      if (doc.status !== "pending") return doc;
    }
  }
  function profileButtons(id, tid, rows) {
    const t = document.getElementById(id);
    if (!t) return;
    const trs = t.querySelectorAll("tr");
    if (trs.length) trs[0].appendChild(el("th", {}, "Profile"));
    rows.forEach((row, i) => {
      const td = el("td");
      for (const [label, kind] of [["jstack", "dumpjstack"], ["heap", "dumpheap"], ["cpu " + CPU_PROFILE_SECS + " s", "cpu"]]) {
        const b = el("button", {"data-profile": kind, type: "button"}, label);
        b.addEventListener("click", async () => {
          const hostPort = row.host + ":" + row.port;
          b.disabled = true;
          try {
            const doc = await profileOf(tid, kind, hostPort);
            const result = document.getElementById("action-result");
            if (result) {
              result.replaceChildren(label + " of " + hostPort + ": ");
              if (doc.logLink) result.appendChild(el("a", {href: doc.logLink, id: "profile-link"}, doc.file));
              else result.append(doc.file || doc.status);
            }
          } catch (e) {
            const result = document.getElementById("action-result");
            if (result) result.textContent = label + " failed: " + e.message;
          } finally { b.disabled = false; }
        });
        td.appendChild(b);
      }
      if (trs[i + 1]) trs[i + 1].appendChild(td);
    });
  }
  const statusCls = (r) => "status-" + r.status;

  const renderers = {
    async index() {
      const [cluster, nimbus, topologies, supervisors] = await Promise.all([
        api("/api/v1/cluster/summary"), api("/api/v1/nimbus/summary"),
        api("/api/v1/topology/summary"), api("/api/v1/supervisor/summary")]);
      kv("cluster-summary", cluster, ["stormVersion", "supervisors", "topologies", "slotsUsed", "slotsFree", "slotsTotal", "executorsTotal", "tasksTotal"]);
      table("nimbus-summary", [["Host", "host"], ["Port", "port", {num: 1}], ["Status", "status"], ["Version", "version"], ["Uptime", "nimbusUpTime"]], nimbus.nimbuses);
      table("topology-summary", [["Name", "name", {link: r => "/topology.html?id=" + encodeURIComponent(r.id)}], ["Id", "id"], ["Owner", "owner"], ["Status", "status", {cls: statusCls}], ["Uptime", "uptime"], ["Workers", "workersTotal", {num: 1}], ["Executors", "executorsTotal", {num: 1}], ["Tasks", "tasksTotal", {num: 1}], ["Worker restarts", "workerRestarts", {num: 1}], ["Degraded", "degraded", {cls: () => "error"}]], topologies.topologies);
      supervisorTable(supervisors);
    },
    async topology() {
      const id = params.get("id");
      const base = "/api/v1/topology/" + encodeURIComponent(id);
      const [doc, svg] = await Promise.all([
        api(base + "?window=" + win()),
        fetch(base + "/graph.svg?window=" + win(), {headers: headers({"Accept": "image/svg+xml"})}).then(r => r.ok ? r.text() : "")]);
      document.getElementById("page-title").textContent = "Topology " + doc.name;
      table("topology-info", [["Name", "name"], ["Id", "id"], ["Owner", "owner"], ["Status", "status", {cls: statusCls}], ["Uptime", "uptime"], ["Workers", "workersTotal", {num: 1}], ["Executors", "executorsTotal", {num: 1}], ["Tasks", "tasksTotal", {num: 1}], ["Message timeout (s)", "msgTimeout", {num: 1}], ["Worker restarts", "workerRestarts", {num: 1}], ["Degraded", "degraded", {cls: () => "error"}]], [doc]);
      if (svg) document.getElementById("topology-graph").innerHTML = svg;
      document.getElementById("debug-state").textContent = doc.debug ? "sampling " + doc.samplingPct + "%" : "not sampling";
      table("topology-stats", [["Window", "windowPretty"], ["Emitted", "emitted", {num: 1}], ["Transferred", "transferred", {num: 1}], ["Complete latency (ms)", "completeLatency", {num: 1}], ["Acked", "acked", {num: 1}], ["Failed", "failed", {num: 1}]], doc.topologyStats);
      const link = (r, key) => "/component.html?topology_id=" + encodeURIComponent(id) + "&id=" + encodeURIComponent(r[key]);
      table("spouts-table", [["Id", "spoutId", {link: r => link(r, "spoutId")}], ["Executors", "executors", {num: 1}], ["Tasks", "tasks", {num: 1}], ...statsCols("spout"), errorCell], doc.spouts);
      table("bolts-table", [["Id", "boltId", {link: r => link(r, "boltId")}], ["Executors", "executors", {num: 1}], ["Tasks", "tasks", {num: 1}], ...statsCols("bolt"), errorCell], doc.bolts);
      const errors = [...doc.spouts.map(s => Object.assign({component: s.spoutId}, s)), ...doc.bolts.map(b => Object.assign({component: b.boltId}, b))].filter(r => r.lastError);
      table("errors-table", [["Component", "component"], ["Host", "errorHost"], ["Port", "errorPort", {num: 1}], ["Seconds ago", "errorLapsedSecs", {num: 1}], ["Error", "lastError", {cls: () => "error"}]], errors);
      table("workers-table", [["Host", "host"], ["Port", "port", {num: 1}], ["Supervisor", "supervisorId"], ["Uptime", "uptime"], ["Executors", r => r.executors.map(e => "[" + e.join("-") + "]").join(" ")], ["Restarts", "restarts", {num: 1}], ["Last exit", "lastExit", {cls: r => r.crashLooping ? "error" : ""}], logCell], doc.workers);
      profileButtons("workers-table", id, doc.workers);
    },
    async component() {
      const tid = params.get("topology_id"), cid = params.get("id");
      const doc = await api("/api/v1/topology/" + encodeURIComponent(tid) + "/component/" + encodeURIComponent(cid) + "?window=" + win());
      document.getElementById("page-title").textContent = doc.componentType + " " + doc.id + " of " + doc.name;
      table("component-info", [["Id", "id"], ["Topology", "name", {link: () => "/topology.html?id=" + encodeURIComponent(tid)}], ["Type", "componentType"], ["Status", "topologyStatus"], ["Executors", "executors", {num: 1}], ["Tasks", "tasks", {num: 1}]], [doc]);
      document.getElementById("debug-state").textContent = doc.debug ? "sampling " + doc.samplingPct + "%" : "not sampling";
      table("component-stats", [["Window", "windowPretty"], ...statsCols(doc.componentType)], doc.spoutSummary || doc.boltStats);
      table("output-stats", [["Stream", "stream"], ["Emitted", "emitted", {num: 1}], ["Transferred", "transferred", {num: 1}]], doc.outputStats);
      table("input-stats", [["Component", "component"], ["Stream", "stream"], ["Grouping", "grouping"]], doc.inputStats || []);
      table("executor-stats", [["Id", "id"], ["Host", "host"], ["Port", "port", {num: 1}], ["Uptime", "uptime"], ...statsCols(doc.componentType), logCell], doc.executorStats);
      table("component-errors", [["Seconds ago", "errorLapsedSecs", {num: 1}], ["Task", "task", {num: 1}], ["Host", "errorHost"], ["Port", "errorPort", {num: 1}], ["Error", "error", {cls: () => "error"}]], doc.componentErrors);
      const fig = (v) => typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : (typeof v === "object" && v !== null ? JSON.stringify(v) : v);
      const metricValue = (r) => r.type === "counter" || r.type === "meter" ? r.count : r.type === "gauge" || r.type === "metric" ? fig(r.value) : r.count;
      table("component-metrics", [["Task", "task", {num: 1}], ["Name", "name"], ["Type", "type"], ["Count / value", metricValue, {num: 1}], ["Mean", r => fig(r.mean)], ["p50", r => fig(r.p50)], ["p99", r => fig(r.p99)], ["Max", r => fig(r.max)], ["1m rate", r => fig(r.m1_rate)]], doc.userMetrics || []);
    },
    async events() {
      const tid = params.get("id"), cid = params.get("component");
      const doc = await api("/api/v1/topology/" + encodeURIComponent(tid) + "/events" + (cid ? "?component=" + encodeURIComponent(cid) : ""));
      document.getElementById("page-title").textContent = "Sampled tuples of " + doc.name + (cid ? " (" + cid + ")" : "");
      document.getElementById("topology-link").setAttribute("href", "/topology.html?id=" + encodeURIComponent(tid));
      table("events-table", [["Time (UTC)", "time"], ["Component", "component"], ["Stream", "stream"], ["Task", "task", {num: 1}], ["Values", r => JSON.stringify(r.values)], ["Message id", r => r.message_id === null ? "" : JSON.stringify(r.message_id)], ["Host", "host"], ["Port", "port", {num: 1}]], doc.events);
    },
    async supervisor() {
      const [supervisors, topologies] = await Promise.all([api("/api/v1/supervisor/summary"), api("/api/v1/topology/summary")]);
      supervisorTable(supervisors);
      const rows = [];
      for (const t of topologies.topologies) {
        const doc = await api("/api/v1/topology/" + encodeURIComponent(t.id));
        for (const w of doc.workers) rows.push(Object.assign({topology: t.name, topologyId: t.id}, w));
      }
      table("supervisor-workers", [["Supervisor", "supervisorId"], ["Host", "host"], ["Port", "port", {num: 1}], ["Topology", "topology", {link: r => "/topology.html?id=" + encodeURIComponent(r.topologyId)}], ["Uptime", "uptime"], ["Executors", r => r.executors.map(e => "[" + e.join("-") + "]").join(" ")], logCell], rows);
    },
  };
  function supervisorTable(doc) {
    table("supervisor-summary", [["Id", "id"], ["Host", "host"], ["Uptime", "uptime"], ["Slots", "slotsTotal", {num: 1}], ["Used slots", "slotsUsed", {num: 1}], ["Free slots", "slotsFree", {num: 1}], ["Version", "version"]], doc.supervisors);
  }

  const status = document.getElementById("status-line");
  let timer = null;
  async function refresh() {
    clearTimeout(timer);
    try {
      await renderers[page]();
      status.textContent = "updated " + new Date().toLocaleTimeString();
      status.className = "";
    } catch (e) {
      status.textContent = e.message;
      status.className = "down";
    }
    timer = setTimeout(refresh, refreshMs);
  }

  document.querySelectorAll("button[data-action]").forEach(button => {
    button.addEventListener("click", async () => {
      const action = button.dataset.action;
      const id = params.get("id");
      const wait = document.getElementById("wait-time").value || "0";
      let path = "/api/v1/topology/" + encodeURIComponent(id) + "/" + action;
      let payload = "";
      if (action === "kill" || action === "rebalance") path += "/" + encodeURIComponent(wait);
      if (action === "rebalance") {
        const workers = prompt("Number of workers (empty: unchanged)", "");
        if (workers === null) return;
        payload = JSON.stringify({rebalanceOptions: workers ? {numWorkers: parseInt(workers, 10)} : {}});
      } else if (!confirm("Do you really want to " + action + " topology " + id + "?")) {
        return;
      }
      const result = document.getElementById("action-result");
      try {
        await api(path, {method: "POST", body: payload, headers: headers({"X-CSRF-Token": csrf, "Content-Type": "application/json"})});
        result.textContent = action + ": done";
      } catch (e) {
        result.textContent = action + " failed: " + e.message;
      }
      refresh();
    });
  });
  // the Debug buttons of the topology and component pages (Storm's event logger)
  const debugTarget = () => page === "component"
    ? {tid: params.get("topology_id"), cid: params.get("id")}
    : {tid: params.get("id"), cid: null};
  const eventsLink = document.getElementById("events-link");
  if (eventsLink) {
    const {tid, cid} = debugTarget();
    eventsLink.setAttribute("href", "/events.html?id=" + encodeURIComponent(tid) + (cid ? "&component=" + encodeURIComponent(cid) : ""));
  }
  document.querySelectorAll("button[data-debug]").forEach(button => {
    button.addEventListener("click", async () => {
      const action = button.dataset.debug;
      const {tid, cid} = debugTarget();
      let pct = "10";
      if (action === "enable") {
        pct = prompt("Sampling percentage of the emitted tuples (0-100]", "10");
        if (pct === null) return;
      }
      const path = "/api/v1/topology/" + encodeURIComponent(tid) + (cid ? "/component/" + encodeURIComponent(cid) : "") + "/debug/" + action + "/" + encodeURIComponent(pct);
      const result = document.getElementById("debug-result");
      try {
        await api(path, {method: "POST", body: "", headers: headers({"X-CSRF-Token": csrf, "Content-Type": "application/json"})});
        result.textContent = "debug " + action + ": done";
      } catch (e) {
        result.textContent = "debug " + action + " failed: " + e.message;
      }
      refresh();
    });
  });
  refresh();
})();
