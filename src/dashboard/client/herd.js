// Shared by every dashboard page: JSON fetching, number formatting, a tiny DOM
// builder (text only, never innerHTML, so names from the fleet cannot inject
// markup), the common widgets, charts, and the light/dark toggle.

// ---- data --------------------------------------------------------------------

/** GET a JSON API; throws with the API's own error message. */
export async function getJson(path) {
  return answer(await authorized(path, { headers: { accept: "application/json" } }), path);
}

/** POST a JSON body; throws with the API's own error message. */
export async function postJson(path, body) {
  const res = await authorized(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body ?? {}) });
  return answer(res, path);
}

async function answer(res, path) {
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error(body?.error ?? `${path}: HTTP ${res.status}`);
  return body;
}

// ---- credentials ---------------------------------------------------------------

// The admin token (or an API key) the user gave, for this tab only: sessionStorage, never a cookie or localStorage.
const TOKEN = "herd-token";
let asking = null;

/**
 * fetch with the stored credential as a bearer token. A 401 asks for one (the admin token before a
 * change, a key or the admin token before a read) and sends the request again; cancelling gives the 401.
 */
async function authorized(path, init) {
  for (let refused = false; ; refused = true) {
    const token = sessionStorage.getItem(TOKEN);
    const res = await fetch(path, token ? { ...init, headers: { ...init.headers, authorization: `Bearer ${token}` } } : init);
    if (res.status !== 401) return res;
    const change = (init.method ?? "GET") !== "GET";
    const given = await askToken(change, refused || Boolean(token));
    if (!given) return res;
    sessionStorage.setItem(TOKEN, given);
  }
}

/** One dialog at a time, however many requests were refused together; resolves to the token, or null. */
function askToken(change, refused) {
  asking ??= new Promise((resolve) => {
    const input = h("input", { type: "password", name: "token", autocomplete: "off", required: true, "aria-label": "Token" });
    const dialog = h(
      "dialog",
      { class: "token-dialog" },
      h(
        "form",
        { method: "dialog" },
        h("h2", null, change ? "Admin token needed" : "This herd needs a key"),
        h("p", { class: "subtitle" }, change ? "Changing the fleet needs the admin token (auth.adminToken in herd.config.ts)." : "Reading the fleet needs an API key (auth.clients) or the admin token."),
        refused && h("p", { class: "notice warn" }, "The token given was refused."),
        input,
        h("div", { class: "dialog-actions" }, h("button", { type: "button", class: "btn", value: "", onclick: () => dialog.close("") }, "Cancel"), h("button", { class: "btn primary", value: "ok" }, "Continue")),
      ),
    );
    dialog.addEventListener("close", () => {
      dialog.remove();
      asking = null;
      resolve(dialog.returnValue === "ok" && input.value.trim() ? input.value.trim() : null);
    });
    document.body.append(dialog);
    dialog.showModal();
  });
  return asking;
}

/**
 * A server-sent event stream of JSON messages; onState(true/false) says whether it is live.
 * EventSource cannot send a credential: once the tab holds one (a herd with client keys refused
 * the stream without it), the stream is read with fetch instead, reconnecting every `retryMs`.
 */
export function liveEvents(path, onMessage, onState, retryMs = 2000) {
  if (sessionStorage.getItem(TOKEN)) return fetchEvents(path, onMessage, onState, retryMs);
  const source = new EventSource(path);
  source.onmessage = (e) => {
    onState(true);
    onMessage(JSON.parse(e.data));
  };
  source.onerror = () => {
    onState(false);
    // Closed for good (a 401, say) rather than reconnecting by itself: try again, with a credential if there is one by then.
    if (source.readyState !== EventSource.CLOSED) return;
    setTimeout(() => liveEvents(path, onMessage, onState, retryMs), retryMs);
  };
}

function fetchEvents(path, onMessage, onState, retryMs) {
  const connect = async () => {
    try {
      const res = await authorized(path, { headers: { accept: "text/event-stream" } });
      if (!res.ok || !res.body) throw new Error(`${path}: HTTP ${res.status}`);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        const events = buffer.split("\n\n");
        buffer = events.pop();
        for (const event of events) {
          const data = event.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
          if (data) {
            onState(true);
            onMessage(JSON.parse(data));
          }
        }
      }
    } catch (e) {
      console.warn(e.message);
    }
    onState(false);
    setTimeout(connect, retryMs);
  };
  connect();
}

/** Runs `task` now and every `ms` after it ends; a failure (say, the router restarting) waits for the next round. */
export function every(ms, task) {
  const tick = async () => {
    try {
      await task();
    } catch (e) {
      console.warn(e.message);
    }
    setTimeout(tick, ms);
  };
  tick();
}

// ---- formatting --------------------------------------------------------------

const missing = (x) => x === null || x === undefined || Number.isNaN(x);

export const fmt = {
  int: (x) => (missing(x) ? "—" : Math.round(x).toLocaleString("en-US")),
  num: (x, digits = 1) => (missing(x) ? "—" : Number(x).toLocaleString("en-US", { maximumFractionDigits: digits })),
  /** 1234 → "1.2k", 2500000 → "2.5M". */
  compact: (x) => (missing(x) ? "—" : Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 }).format(x)),
  ms: (x) => (missing(x) ? "—" : x >= 10_000 ? `${(x / 1000).toFixed(1)} s` : x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${Math.round(x)} ms`),
  gb: (x) => (missing(x) ? "—" : `${Number(x).toLocaleString("en-US", { maximumFractionDigits: x < 10 ? 1 : 0 })} GB`),
  pct: (x, digits = 0) => (missing(x) ? "—" : `${Number(x).toFixed(digits)}%`),
  /** A 0–1 rate as a percentage. */
  rate: (x) => (missing(x) ? "—" : `${(x * 100).toFixed(x > 0 && x < 0.01 ? 2 : 1)}%`),
  /** Unix seconds → "3 min ago". */
  ago(ts) {
    if (missing(ts)) return "never";
    const s = Math.max(0, Date.now() / 1000 - ts);
    if (s < 5) return "just now";
    if (s < 90) return `${Math.round(s)} s ago`;
    if (s < 5400) return `${Math.round(s / 60)} min ago`;
    if (s < 129600) return `${Math.round(s / 3600)} h ago`;
    return `${Math.round(s / 86400)} d ago`;
  },
  /** Unix seconds → local date and time. */
  time: (ts) => (missing(ts) ? "—" : new Date(ts * 1000).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" })),
};

// ---- DOM ---------------------------------------------------------------------

/**
 * h("div", { class: "x", onclick: f, title: "t" }, "text", child, [more]): an element.
 * Strings become text nodes; null, undefined and false are skipped.
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "style" && typeof value === "object") Object.assign(el.style, value);
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces what `el` (or the element with that id) holds. */
export function mount(el, ...children) {
  const target = typeof el === "string" ? document.getElementById(el) : el;
  target.replaceChildren();
  append(target, children);
  return target;
}

/** The page's body: a stack of sections. */
export const page = (...children) => mount("page", h("div", { class: "stack" }, children));

/** Buttons and selectors beside the page title. */
export const actions = (...children) => mount("page-actions", children);

/** Runs a page's entry point; a failure is shown in place of the page, not just logged. */
export async function start(main) {
  try {
    await main();
  } catch (e) {
    mount("page", notice("error", `Could not load this page: ${e.message}`));
  }
}

// ---- widgets -----------------------------------------------------------------

export function panel(title, { subtitle, actions: tools, flush } = {}, ...children) {
  return h(
    "section",
    { class: "panel" },
    title && h("div", { class: "panel-head" }, h("h2", null, title), subtitle && h("p", { class: "subtitle" }, subtitle), h("span", { class: "spacer" }), tools),
    h("div", { class: flush ? "panel-body flush" : "panel-body" }, children),
  );
}

/** A titled group of cards that needs no frame of its own. */
export function section(title, subtitle, ...children) {
  return h("section", null, h("div", { class: "section-head" }, h("h2", null, title), subtitle && h("span", { class: "subtitle" }, subtitle)), children);
}

/** Side by side on a wide screen, stacked on a narrow one. */
export const columns = (...children) => h("div", { class: "grid-2" }, children);

/** [{label, value, hint}] → a row of number cards. */
export function stats(items) {
  return h(
    "div",
    { class: "stats" },
    items.map(({ label, value, hint }) =>
      h("div", { class: "panel stat" }, h("div", { class: "stat-label" }, label), h("div", { class: "stat-value" }, value), hint && h("div", { class: "stat-hint" }, hint)),
    ),
  );
}

/** kind: ok | info | warn | crit | accent | (none for neutral). */
export const badge = (text, kind = "", extra = "") => h("span", { class: `badge ${kind} ${extra}`.trim() }, text);

export const SEVERITY_KIND = { ok: "ok", online: "ok", info: "info", warning: "warn", degraded: "warn", critical: "crit", offline: "crit", high: "crit", medium: "warn", low: "info" };

/** A filled bar for a 0–1 fraction, coloured by how full it is unless `kind` says. */
export function meter(fraction, label, kind) {
  const f = Math.max(0, Math.min(1, Number(fraction) || 0));
  const tone = kind ?? (f >= 0.9 ? "crit" : f >= 0.75 ? "warn" : "ok");
  return h(
    "div",
    { class: "meter" },
    h("div", { class: "meter-track" }, h("div", { class: `meter-fill ${tone}`, style: { width: `${(f * 100).toFixed(1)}%` } })),
    label !== undefined && h("span", { class: "meter-label" }, label),
  );
}

export const empty = (title, hint) => h("div", { class: "empty" }, h("strong", null, title), hint);

export const notice = (kind, text) => h("div", { class: `notice ${kind}` }, text);

/**
 * columns: [{ label, value: (row) => text | Node, right?: true, wrap?: true }].
 * An empty list shows `emptyText` instead of a header with nothing under it;
 * rowProps(row) gives each <tr> its attributes (e.g. data-* for tests and scripts).
 */
export function table(columns, rows, emptyText = "Nothing here yet.", rowProps = () => null) {
  if (!rows.length) return empty(emptyText);
  const cls = (c) => [c.right && "r", c.wrap && "wrap"].filter(Boolean).join(" ") || null;
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "data" },
      h("thead", null, h("tr", null, columns.map((c) => h("th", { class: cls(c) }, c.label)))),
      h("tbody", null, rows.map((row) => h("tr", rowProps(row), columns.map((c) => h("td", { class: cls(c) }, c.value(row)))))),
    ),
  );
}

/** A share of the largest value, as a thin bar beside the number. */
export const share = (value, max, text) => h("div", { class: "share" }, h("span", { class: "num", style: { minWidth: "56px" } }, text), meter(max ? value / max : 0, undefined, "accent"));

/** A choice of a few values (e.g. 24 h / 72 h / 7 d), remembered in the URL's query. */
export function segmented(param, options, fallback, onChange) {
  const url = new URL(location.href);
  let current = Number(url.searchParams.get(param)) || fallback;
  if (!options.some(([value]) => value === current)) current = fallback;
  const buttons = options.map(([value, label]) =>
    h("button", { type: "button", "aria-pressed": String(value === current), onclick: () => choose(value) }, label),
  );
  function choose(value) {
    current = value;
    options.forEach(([v], i) => buttons[i].setAttribute("aria-pressed", String(v === value)));
    url.searchParams.set(param, String(value));
    history.replaceState(null, "", url);
    Promise.resolve(onChange(value)).catch((e) => flash("error", e.message));
  }
  return { el: h("div", { class: "segmented", role: "group" }, buttons), value: () => current };
}

/** An on/off switch; onChange gets the new state, and a failure flips it back and says why. No onChange: read-only. */
export function toggle(checked, label, onChange) {
  const input = h("input", { type: "checkbox", role: "switch", "aria-label": label, checked, disabled: !onChange });
  input.addEventListener("change", async () => {
    input.disabled = true;
    try {
      await onChange(input.checked);
    } catch (e) {
      input.checked = !input.checked;
      flash("error", e.message);
    } finally {
      input.disabled = false;
    }
  });
  return h("label", { class: "switch", title: label }, input, h("span"));
}

/** A message in the corner for a few seconds: the outcome of an action that has no place of its own. */
export function flash(kind, text) {
  const el = h("div", { class: `notice ${kind} flash`, role: "status" }, text);
  document.body.append(el);
  setTimeout(() => el.remove(), 6000);
}

/** A button that runs an async action, disabled while it runs; a failure says why. */
export function actionButton(text, cls, action) {
  const button = h("button", { type: "button", class: `btn ${cls}` }, text);
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await action(button);
    } catch (e) {
      flash("error", e.message);
    } finally {
      button.disabled = false;
    }
  });
  return button;
}

// ---- charts (uPlot, loaded by the pages that draw charts) -------------------------

const PALETTE_LIGHT = ["#2f6fed", "#13a36b", "#e8850c", "#c2399b", "#7a4fe0", "#0aa3b8", "#d1453b", "#7d8a99"];
const PALETTE_DARK = ["#6b9bff", "#4cc47e", "#f0a545", "#e06bbf", "#a486ff", "#3cc8d8", "#f26b6b", "#a3adbb"];
const charts = new Set();

const seriesColor = (i) => (theme() === "dark" ? PALETTE_DARK : PALETTE_LIGHT)[i % PALETTE_LIGHT.length];

/**
 * A time chart: x in unix seconds, one line (or bars) per series.
 * series: [{ label, values, format?: (v) => string, bars?: true }].
 */
export function chart({ x, series, height = 240, yFormat = fmt.compact }) {
  if (!x.length) return empty("No data in this window yet.", "Send some requests through herd and they show up here.");
  const el = h("div", { class: "chart" });
  let plot = null;
  const draw = () => {
    plot?.destroy();
    const css = getComputedStyle(document.documentElement);
    const text = css.getPropertyValue("--muted").trim();
    const grid = css.getPropertyValue("--border").trim();
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    // Wide enough for the longest label ("1,250 ms"), so none is clipped.
    const ySize = (_, labels) => 16 + 7 * Math.max(3, ...(labels ?? []).map((l) => String(l).length));
    plot = new uPlot(
      {
        width: Math.max(280, el.clientWidth),
        height,
        cursor: { points: { size: 7 } },
        scales: { x: { time: true } },
        axes: [axis, { ...axis, size: ySize, values: (_, ticks) => ticks.map((t) => yFormat(t)) }],
        series: [{}, ...series.map(line)],
      },
      [x, ...series.map((s) => s.values)],
      el,
    );
  };
  const line = (s, i) => {
    const color = seriesColor(i);
    const value = (_, v) => (v === null || v === undefined ? "—" : (s.format ?? yFormat)(v));
    // Bars have no outline: an empty hour stays empty rather than a dash on the axis.
    if (s.bars) return { label: s.label, stroke: color, width: 0, fill: color + "d9", value, points: { show: false }, paths: uPlot.paths.bars({ size: [0.7, 40] }) };
    // A sparse series is mostly gaps: its points are what shows.
    const sparse = s.values.filter((v) => v !== null && v !== undefined).length <= 40;
    return { label: s.label, stroke: color, width: 2, fill: series.length === 1 ? color + "1f" : undefined, value, points: { show: sparse, size: 6, fill: color } };
  };
  charts.add(draw);
  // Drawn once the element is in the page (its width is known), redrawn when it resizes, dropped when it goes.
  let lastWidth = 0;
  const observer = new ResizeObserver(() => {
    if (!el.isConnected) {
      plot?.destroy();
      charts.delete(draw);
      return observer.disconnect();
    }
    if (Math.abs(el.clientWidth - lastWidth) < 8) return;
    lastWidth = el.clientWidth;
    draw();
  });
  observer.observe(el);
  return el;
}

/** "2026-03-08 01:00:00" or "2026-03-08" (UTC, as the APIs give them) → unix seconds. */
export const utcSeconds = (stamp) => Date.parse(`${stamp.replace(" ", "T")}${stamp.length === 10 ? "T00:00:00" : ""}Z`) / 1000;

/** Every day from `days` ago to today (UTC, unix seconds), so a chart shows quiet days as zero. */
export function dayAxis(days) {
  const today = Math.floor(Date.now() / 86_400_000) * 86_400;
  return Array.from({ length: days }, (_, i) => today - (days - 1 - i) * 86_400);
}

/** One series per key (model, tag …) over `axis`, from rows of {day, key, value}. */
export function pivot(rows, axis, keyOf, valueOf, missingValue = null) {
  const keys = [...new Set(rows.map(keyOf))];
  const at = new Map(axis.map((t, i) => [t, i]));
  return keys.map((key) => {
    const values = axis.map(() => missingValue);
    for (const row of rows) {
      if (keyOf(row) !== key) continue;
      const i = at.get(utcSeconds(row.day));
      if (i !== undefined) values[i] = valueOf(row);
    }
    return { label: key, values };
  });
}

// ---- theme ---------------------------------------------------------------------

const theme = () => document.documentElement.dataset.theme;
const SUN = `<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"><circle cx="12" cy="12" r="4"/><path d="M12 2v2M12 20v2M4.9 4.9l1.4 1.4M17.7 17.7l1.4 1.4M2 12h2M20 12h2M4.9 19.1l1.4-1.4M17.7 6.3l1.4-1.4"/></svg>`;
const MOON = `<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M21 12.8A9 9 0 1 1 11.2 3a7 7 0 0 0 9.8 9.8z"/></svg>`;

function setTheme(next, remember) {
  document.documentElement.dataset.theme = next;
  if (remember) localStorage.setItem("herd-theme", next);
  const button = document.getElementById("theme-toggle");
  // Constant markup of our own, not data: the one place innerHTML is safe.
  if (button) button.innerHTML = next === "dark" ? SUN : MOON;
  charts.forEach((draw) => draw());
}

setTheme(theme() ?? "light", false);
document.getElementById("theme-toggle")?.addEventListener("click", () => setTheme(theme() === "dark" ? "light" : "dark", true));
// Follow the system until the user has chosen.
matchMedia("(prefers-color-scheme: dark)").addEventListener("change", (e) => {
  if (!localStorage.getItem("herd-theme")) setTheme(e.matches ? "dark" : "light", false);
});
