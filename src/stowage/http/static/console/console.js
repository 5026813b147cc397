"use strict";
// Stowage console: plain JS, no build step. Credentials live in sessionStorage only.
const $ = (id) => document.getElementById(id);
const PART = 8 * 1024 * 1024;
const MULTIPART_FROM = 16 * 1024 * 1024;
const state = { key: "", secret: "", cdn: "", next: null, files: new Map(), current: null, versions: new Map() };

function auth() { return "Basic " + btoa("app:" + state.secret); }
function q(extra = {}) { return new URLSearchParams({ key: state.key, ...extra }).toString(); }
function human(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}
function when(ms) { return new Date(ms).toISOString().replace("T", " ").slice(0, 19); }

// ---- transformations (the CDN's image processing) ----------------------------------
const THUMB = 96;  // 48 CSS px at 2x
function isImage(type) { return typeof type === "string" && type.startsWith("image/") && type !== "image/svg+xml"; }
// After an overwrite in this tab, a query the server ignores keeps the browser from
// showing the old version's cached thumbnail under the same URL.
function fresh(handle) { const v = state.versions.get(handle); return v ? "?v=" + v : ""; }
function transformUrl(handle, chain) { return `${state.cdn}/${chain}/${handle}${fresh(handle)}`; }
function plainUrl(handle) { return `${state.cdn}/${handle}${fresh(handle)}`; }
function thumbnail(f) {
  const img = document.createElement("img");
  img.className = "thumb"; img.alt = ""; img.loading = "lazy"; img.decoding = "async";
  img.width = 48; img.height = 48;
  img.dataset.transform = transformUrl(f.handle, `resize=width:${THUMB}`);
  // Without the processing engine (or for a format it refuses) the file itself, scaled by
  // the browser; if that fails too (security on), no thumbnail.
  img.addEventListener("error", () => {
    if (img.dataset.fallback) { img.hidden = true; return; }
    img.dataset.fallback = "1"; img.src = plainUrl(f.handle);
  });
  img.src = img.dataset.transform;
  return img;
}
function loadImage(src) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => resolve(img); img.onerror = () => reject(new Error("image did not load"));
    img.src = src;
  });
}

function showError(err) {
  const box = $("alert");
  box.textContent = err && err.message ? err.message : String(err);
  box.hidden = false;
}
function clearError() { $("alert").hidden = true; $("alert").textContent = ""; }

async function failure(resp) {
  try { const body = await resp.json(); return new Error(`${body.error.code}: ${body.error.message}`); }
  catch { return new Error(`HTTP ${resp.status}`); }
}

async function api(path, options = {}) {
  const resp = await fetch(path, { ...options, headers: { Authorization: auth(), ...(options.headers || {}) } });
  if (!resp.ok) throw await failure(resp);
  return resp;
}

// XMLHttpRequest, because fetch cannot report upload progress.
function send(method, url, body, onProgress, headers = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    xhr.setRequestHeader("Authorization", auth());
    for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) return resolve(xhr);
      try { const b = JSON.parse(xhr.responseText); reject(new Error(`${b.error.code}: ${b.error.message}`)); }
      catch { reject(new Error(`HTTP ${xhr.status}`)); }
    };
    xhr.onerror = () => reject(new Error("network error"));
    xhr.send(body);
  });
}

// ---- sign in --------------------------------------------------------------------
async function signIn(key, secret) {
  state.key = key; state.secret = secret;
  await api("/api/files?" + q({ limit: 1 }));  // checks both key and secret
  sessionStorage.setItem("stowage.key", key);
  sessionStorage.setItem("stowage.secret", secret);
  $("signin").hidden = true; $("app").hidden = false; $("signout").hidden = false;
  try {
    const doc = await (await fetch("/api/openapi.json")).json();
    state.cdn = doc.paths["/{handle}"].servers[0].url;
  } catch { state.cdn = ""; }
  await refresh();
}

function signOut() {
  sessionStorage.removeItem("stowage.key"); sessionStorage.removeItem("stowage.secret");
  location.reload();
}

// ---- list -----------------------------------------------------------------------
async function refresh() { $("rows").textContent = ""; state.files.clear(); state.next = null; await loadPage(); }

async function loadPage() {
  const page = await (await api("/api/files?" + q({ limit: 50, ...(state.next ? { after: state.next } : {}) }))).json();
  if (page.providers) offerProviders(page.providers);
  for (const f of page.files) addRow(f);
  state.next = page.next;
  $("more").hidden = !page.next;
  $("empty").hidden = state.files.size > 0;
}

// Only the providers this app can store to, named as the store path names them.
function offerProviders(names) {
  const select = $("provider"); const chosen = select.value;
  select.textContent = "";
  for (const name of names) { const o = document.createElement("option"); o.textContent = name; select.append(o); }
  if (names.includes(chosen)) select.value = chosen;
}

function providerText(f) { return f.provider + (f.location !== f.provider ? ` (${f.location})` : ""); }

function cell(tr, label, text) {
  const td = document.createElement("td"); td.dataset.label = label; td.textContent = text; tr.append(td); return td;
}

function addRow(f) {
  // An upload that ends while the first page loads is in both: one row per handle.
  $("row-" + f.handle)?.remove();
  state.files.set(f.handle, f);
  const tr = document.createElement("tr"); tr.id = "row-" + f.handle;
  const name = document.createElement("td"); name.className = "name";
  const open = document.createElement("button"); open.type = "button"; open.textContent = f.filename;
  open.addEventListener("click", () => openDetails(f.handle));
  if (state.cdn && isImage(f.mimetype)) name.append(thumbnail(f));
  name.append(open); tr.append(name);
  cell(tr, "Size", human(f.size)); cell(tr, "Type", f.mimetype);
  cell(tr, "Uploaded", when(f.uploaded)); cell(tr, "Provider", providerText(f));
  const actions = cell(tr, "", "");
  const del = document.createElement("button"); del.type = "button"; del.className = "danger";
  del.textContent = "Delete"; del.setAttribute("aria-label", "Delete " + f.filename);
  del.addEventListener("click", () => confirmDelete(f.handle));
  actions.append(del);
  $("rows").prepend(tr);
}

// ---- upload ---------------------------------------------------------------------
function uploadRow(file) {
  const li = document.createElement("li");
  const name = document.createElement("span"); name.textContent = file.name;
  const bar = document.createElement("progress"); bar.max = file.size || 1; bar.value = 0;
  bar.setAttribute("aria-label", "Upload of " + file.name);
  const status = document.createElement("span"); status.textContent = "0%";
  li.append(name, bar, status); $("uploads").append(li);
  return { li, set(n) { bar.value = n; status.textContent = Math.floor((100 * n) / (file.size || 1)) + "%"; },
           done(text, error) { status.textContent = text; if (error) status.className = "error"; else bar.value = bar.max; } };
}

async function uploadFile(file) {
  const row = uploadRow(file);
  const provider = $("provider").value;
  try {
    let result;
    if (file.size >= MULTIPART_FROM) result = await multipart(file, provider, row.set);
    if (!result) {
      const xhr = await send("POST", `/api/store/${encodeURIComponent(provider)}?` + q({ filename: file.name }), file,
        row.set, { "Content-Type": file.type || "application/octet-stream" });
      result = JSON.parse(xhr.responseText);
    }
    row.done("done");
    // The row as a refresh will show it: where the bytes really are, when they were stored.
    const meta = await (await api(`/api/file/${encodeURIComponent(result.handle)}/metadata?` + q({ location: "true", uploaded: "true" }))).json();
    const listed = { handle: result.handle, filename: result.filename, size: result.size, mimetype: result.type || result.mimetype,
                     uploaded: meta.uploaded, provider, location: meta.location, container: result.container, key: result.key };
    addRow(listed); $("empty").hidden = true;
  } catch (err) {
    row.done(err.message, true);
    showError(`Upload of ${file.name} failed: ${err.message}`);
  }
}

// The resumable upload protocol (/multipart/*): parts of 8 MiB, each PUT to a signed URL.
async function multipart(file, provider, onProgress) {
  const post = async (path, body) => {
    const resp = await fetch(path, { method: "POST", headers: { Authorization: auth(), "Content-Type": "application/json" },
                                     body: JSON.stringify({ apikey: state.key, ...body }) });
    if (resp.status === 404 && path === "/multipart/start") return null;  // no protocol: plain store
    if (!resp.ok) throw await failure(resp);
    return resp;
  };
  const started = await post("/multipart/start", { filename: file.name, mimetype: file.type || undefined, size: file.size, store: { location: provider } });
  if (!started) return null;
  const { upload_id } = await started.json();
  const parts = [];
  for (let n = 1, start = 0; start < file.size; n++, start += PART) {
    const blob = file.slice(start, Math.min(file.size, start + PART));
    const target = await (await post("/multipart/upload", { upload_id, part: n, size: blob.size })).json();
    const xhr = await send("PUT", target.url, blob, (loaded) => onProgress(start + loaded), target.headers || {});
    parts.push({ part_number: n, etag: (xhr.getResponseHeader("ETag") || "").replaceAll('"', "") });
  }
  for (;;) {
    const resp = await post("/multipart/complete", { upload_id, parts, filename: file.name, size: file.size });
    if (resp.status !== 202) return resp.json();
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function uploadAll(files) { clearError(); for (const f of files) uploadFile(f); }

// ---- details, preview, links -------------------------------------------------------
async function openDetails(handle) {
  clearError();
  const f = state.files.get(handle); state.current = handle;
  $("details-title").textContent = f.filename;
  $("api-link").value = `${location.origin}/api/file/${handle}`;
  $("cdn-link").value = state.cdn ? `${state.cdn}/${handle}` : "";
  $("preview").textContent = ""; $("meta").textContent = "";
  $("details").showModal();
  try {
    const meta = await (await api(`/api/file/${handle}/metadata?` + q({ size: true, mimetype: true, filename: true, uploaded: true,
      location: true, container: true, path: true, md5: true, sha256: true }))).json();
    for (const [k, v] of Object.entries(meta)) {
      const dt = document.createElement("dt"); dt.textContent = k;
      const dd = document.createElement("dd"); dd.textContent = k === "uploaded" ? when(v) : String(v);
      $("meta").append(dt, dd);
    }
    await preview(handle, meta.mimetype || f.mimetype);
  } catch (err) { showError(err); }
}

async function preview(handle, type) {
  const box = $("preview");
  const kind = type.startsWith("image/") && type !== "image/svg+xml" ? "image"
    : type === "application/pdf" ? "pdf"
    : type.startsWith("text/") || type === "application/json" ? "text" : null;
  if (!kind) { box.textContent = "No preview for " + type + "."; return; }
  if (kind === "image" && state.cdn) {
    // A resized preview from the CDN, never larger than the file (fit:max); the whole
    // file through the API only if the transformation answers an error.
    const width = window.devicePixelRatio > 1 ? 1600 : 800;
    const url = transformUrl(handle, `resize=width:${width},fit:max`);
    try {
      const img = await loadImage(url);
      img.dataset.transform = url; img.alt = "Preview of " + state.files.get(handle).filename;
      box.append(img); return;
    } catch { /* falls back to the file below */ }
  }
  const resp = await api(`/api/file/${handle}?` + q(), kind === "text" ? { headers: { Range: "bytes=0-65535" } } : {});
  if (kind === "text") {
    const pre = document.createElement("pre"); pre.textContent = await resp.text(); box.append(pre); return;
  }
  const url = URL.createObjectURL(new Blob([await resp.blob()], { type }));
  if (kind === "image") {
    const img = await loadImage(url); img.dataset.fallback = "1";
    img.alt = "Preview of " + state.files.get(handle).filename; box.append(img);
  } else {
    const frame = document.createElement("iframe"); frame.src = url; frame.title = "PDF preview"; box.append(frame);
  }
}

async function copyLink(id) {
  const input = $(id); input.select();
  try { await navigator.clipboard.writeText(input.value); } catch { document.execCommand("copy"); }
  const button = document.querySelector(`[data-copy="${id}"]`); const label = button.textContent;
  button.textContent = "Copied"; setTimeout(() => { button.textContent = label; }, 1500);
}

async function overwrite(file) {
  const handle = state.current; const box = $("overwrite-progress"); const bar = box.querySelector("progress");
  box.hidden = false; bar.max = file.size || 1; bar.value = 0;
  try {
    const xhr = await send("POST", `/api/file/${handle}?` + q(), file, (n) => { bar.value = n; },
      { "Content-Type": file.type || "application/octet-stream" });
    const result = JSON.parse(xhr.responseText);
    Object.assign(state.files.get(handle), { size: result.size, mimetype: result.mimetype, filename: result.filename });
    state.versions.set(handle, Date.now());
    box.hidden = true; await refresh(); await openDetails(handle);
  } catch (err) { box.hidden = true; showError(err); }
}

function confirmDelete(handle) {
  const f = state.files.get(handle);
  $("confirm-text").textContent = `${f.filename} (${human(f.size)}) will be deleted from storage. This cannot be undone.`;
  const dialog = $("confirm");
  dialog.returnValue = "";
  dialog.onclose = async () => {
    if (dialog.returnValue !== "delete") return;
    try {
      await api(`/api/file/${handle}?` + q(), { method: "DELETE" });
      $("row-" + handle)?.remove(); state.files.delete(handle);
      if ($("details").open) $("details").close();
      $("empty").hidden = state.files.size > 0;
    } catch (err) { showError(err); }
  };
  dialog.showModal();
}

// ---- wiring -----------------------------------------------------------------------
$("signin-form").addEventListener("submit", async (e) => {
  e.preventDefault(); clearError();
  try { await signIn($("key").value.trim(), $("secret").value); }
  catch (err) { state.secret = ""; showError(`Sign-in failed: ${err.message}`); }
});
$("signout").addEventListener("click", signOut);
$("files").addEventListener("change", (e) => { uploadAll(e.target.files); e.target.value = ""; });
$("overwrite").addEventListener("change", (e) => { if (e.target.files[0]) overwrite(e.target.files[0]); e.target.value = ""; });
$("delete").addEventListener("click", () => confirmDelete(state.current));
$("refresh").addEventListener("click", () => refresh().catch(showError));
$("more").addEventListener("click", () => loadPage().catch(showError));
document.querySelectorAll("[data-copy]").forEach((b) => b.addEventListener("click", () => copyLink(b.dataset.copy)));
const drop = $("drop");
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); uploadAll(e.dataTransfer.files); });
$("details").addEventListener("close", () => {
  for (const el of $("preview").querySelectorAll("img, iframe")) if (el.src.startsWith("blob:")) URL.revokeObjectURL(el.src);
});

const savedKey = sessionStorage.getItem("stowage.key"), savedSecret = sessionStorage.getItem("stowage.secret");
if (savedKey && savedSecret) signIn(savedKey, savedSecret).catch((err) => showError(err));
