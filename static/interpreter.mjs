// Riacho's interpreter module (pyscript.toml's `interpreter`): Pyodide, booted from a memory
// snapshot of this browser's own first boot when it has one.
//
// A first visit boots normally. Once the page is ready and has been idle a while, a worker
// boots a second interpreter of its own, installs the same packages, imports the app's pure
// modules (everything but app/browser/ and main.py: no page state), copies its heap (Pyodide's
// snapshot API, private in 314.0.7: `_makeSnapshot`, `makeMemorySnapshot()`, `_loadSnapshot`)
// into Cache Storage, and ends. The next visit restores that heap instead of starting Python
// and importing the app. No byte more on the wire: the snapshot never leaves the browser (one
// made at build time and downloaded is ~6.5 MB brotli, more than the whole page; see README),
// and the page's own boot and interpreter are never touched by the making.
//
// What a restore needs, and how each is checked:
// - the same runtime build: Pyodide checks its build id, and the entry names the version;
// - the same packages: the entry names the sha256 of pyodide-lock.json, checked before;
// - the same app: the sha256 of each wheel the page names by URL (the app's own, served
//   no-cache, so revalidated on every visit), fetched while the runtime starts and checked
//   before the page gets the interpreter; a stale heap is thrown away and the page boots
//   normally, making a new snapshot;
// - the installed files: stored with the heap and written back as they were (fetching and
//   unpacking the wheels again cost a restore ~160 ms of its ~900);
// - each shared library (pydantic-core's .so) loaded before Python starts, in one fixed order,
//   when the snapshot is made and when it is restored: its data and functions then land at the
//   same heap and table addresses the heap points at. The worker reads it from its wheel (from
//   the HTTP cache: static/vendor/ is cached immutable); the snapshot is stored with a copy, so
//   a restore does not wait for the wheel.
// A normal boot (a first visit, or a refused snapshot) installs its packages from wheels a worker
// downloaded after the runtime's files and unpacked (see downloadInWorker), or, when that fails,
// with Pyodide's own loader; `globalThis.riachoInterpreter.install` says which.
// Anything wrong falls back to a normal boot; `globalThis.riachoInterpreter.snapshot` says what
// happened: "restored"; "refused" (with `error`), then a normal boot; "booted" (normally), then
// "making" and "stored", or "not made" (with `error`); "off" (with `error`: no Cache Storage
// here); `history` lists every state in order.
import * as pyodide from "./vendor/pyodide/pyodide.mjs";

export const version = pyodide.version;

const INDEX_URL = new URL("./vendor/pyodide/", import.meta.url).href;
const CACHE_NAME = "riacho-boot";
const ENTRY_URL = new URL("./boot-snapshot", import.meta.url).href; // a cache key, never fetched
const APP_PACKAGE = "app";
// The stored entry's headers. Its body: the snapshot, each shared library, then each installed
// file of site-packages, then a JSON index of those files and of pyodide.loadedPackages.
const HEADERS = {
  version: "x-riacho-pyodide",
  lock: "x-riacho-lock", // sha256 of pyodide-lock.json
  wheels: "x-riacho-wheels", // JSON: {url: sha256} of each package given by URL (the app's)
  heap: "x-riacho-snapshot-bytes",
  libs: "x-riacho-libs", // JSON: [[path, length], …]
  files: "x-riacho-files-bytes",
  index: "x-riacho-index-bytes",
};
// NOTE: the making costs a worker about one boot's CPU: not while the page itself starts.
// `?bootSnapshotDelayMs=N` overrides it for one page load (the end-to-end tests use 0).
const MAKE_AFTER_READY_MS = 5000;
const MAKE_IDLE_TIMEOUT_MS = 5000;

// Import the app's pure modules (every module of the app but app/browser/'s, which touch js):
// the heap the snapshot keeps.
function importPureModules(py, sitePackages) {
  const names = [];
  for (const path of pathsUnder(py, sitePackages + APP_PACKAGE)) {
    const dotted = path.slice(sitePackages.length).replace(/\.pyc?$/, "");
    if (dotted === path.slice(sitePackages.length) || dotted.includes("__pycache__")) continue;
    if (dotted.startsWith(`${APP_PACKAGE}/browser/`)) continue;
    names.push(dotted.replace(/\/__init__$/, "").replaceAll("/", "."));
  }
  py.runPython(
    `import importlib\nfor name in ${JSON.stringify(names)}:\n    importlib.import_module(name)\n`,
  );
  return names;
}

// NOTE: the heap froze the state of `random`: draw fresh seeds.
const RESEED = `
import sys
if "random" in sys.modules:
    sys.modules["random"].seed()
`;

const boot = (globalThis.riachoInterpreter = { snapshot: "off", history: [] });

function report(state, error) {
  boot.snapshot = state;
  boot.history.push(state);
  if (error !== undefined) {
    boot.error = String(error);
    console.info(`riacho: boot snapshot ${state}:`, String(error));
  }
}

// --- zip archives (wheels) -------------------------------------------------------------------

// The members of a zip archive: name, method, sizes and where the data starts.
export function zipMembers(zip) {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  let eocd = zip.length - 22;
  while (eocd >= 0 && view.getUint32(eocd, true) !== 0x06054b50) eocd--;
  if (eocd < 0) throw new Error("not a zip archive");
  const count = view.getUint16(eocd + 10, true);
  let at = view.getUint32(eocd + 16, true);
  const decoder = new TextDecoder();
  const members = [];
  for (let i = 0; i < count; i++) {
    if (view.getUint32(at, true) !== 0x02014b50) throw new Error("bad zip directory");
    const nameLength = view.getUint16(at + 28, true);
    const local = view.getUint32(at + 42, true);
    members.push({
      name: decoder.decode(zip.subarray(at + 46, at + 46 + nameLength)),
      method: view.getUint16(at + 10, true),
      packed: view.getUint32(at + 20, true),
      size: view.getUint32(at + 24, true),
      start: local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true),
    });
    at += 46 + nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
  }
  return members;
}

// One member's bytes (stored or deflated).
export async function unzipMember(zip, member) {
  const data = zip.subarray(member.start, member.start + member.packed);
  if (member.method === 0) return data;
  if (member.method !== 8) throw new Error(`${member.name}: zip method ${member.method}`);
  const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  const out = new Uint8Array(await new Response(stream).arrayBuffer());
  if (out.length !== member.size) throw new Error(`${member.name}: ${out.length} bytes`);
  return out;
}

// --- what the boot depends on ----------------------------------------------------------------

async function fetchBytes(url, init = {}) {
  const response = await fetch(url, init);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function sha256(chunks) {
  const parts = [];
  for (const chunk of chunks) parts.push(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk);
  const digest = await crypto.subtle.digest("SHA-256", await new Blob(parts).arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// Every locked package the page's list needs (names; paths such as the app's wheel are pure
// Python and skipped), with their dependencies, sorted by name.
export function lockedClosure(lock, requested) {
  const found = new Set();
  const visit = (name) => {
    const key = name.toLowerCase().replaceAll("_", "-");
    if (found.has(key)) return;
    const entry = lock.packages[key];
    if (entry === undefined) throw new Error(`${name} is not in pyodide-lock.json`);
    found.add(key);
    for (const dependency of entry.depends ?? []) visit(dependency);
  };
  for (const name of requested) if (!name.includes("/") && !name.endsWith(".whl")) visit(name);
  return [...found].sort();
}

// The shared libraries of those packages, in a fixed order: [{path, bytes}].
async function sharedLibraries(lock, requested, sitePackages) {
  const wheels = wheelsToInstall(lock, requested, INDEX_URL).filter(
    ({ url, channel }) => channel === "default channel" && !url.endsWith("-none-any.whl"),
  );
  const perWheel = await Promise.all(
    wheels.map(async ({ url }) => {
      const zip = await fetchBytes(url);
      const members = zipMembers(zip).filter((m) => m.name.endsWith(".so"));
      members.sort((a, b) => (a.name < b.name ? -1 : 1));
      return Promise.all(
        members.map(async (m) => ({ path: sitePackages + m.name, bytes: await unzipMember(zip, m) })),
      );
    }),
  );
  return perWheel.flat();
}

// --- loading -----------------------------------------------------------------------------------

// loadPyodide with Pyodide's module factory wrapped to load the shared libraries (`libs`, a
// promise of [{path, bytes}]) before Python starts: an Emscripten preRun, after Pyodide's own,
// which allocate nothing on the heap. The package loader's dlopen of the same path later finds
// each loaded. `heapBytes` (a promise; 0: none): the memory is grown to a snapshot's heap before
// the restore copies it in (loadPyodide's INITIAL_MEMORY does not size this build's memory).
// Both are awaited in the preRun: they load while the runtime downloads and compiles.
// NOTE: a preRun's failure cannot fail Emscripten's start (it would wait forever): it rejects
// the race instead, and the caller boots normally.
export function loadWithLibraries(config, create, libs, heapBytes = 0) {
  let fail;
  const failed = new Promise((_, reject) => (fail = reject));
  const createPyodideModule = async (settings) => {
    const createModule = await create;
    const preload = async (Module) => {
      Module.addRunDependency("riacho-preload-dynlibs");
      try {
        for (const { path, bytes } of await libs) {
          // NOTE: Emscripten's loadDynamicLibrary, minus finding the file: before the runtime
          // is initialised it does not look in the file system.
          const flags = { loadAsync: true, global: true, nodelete: true };
          const dso = Module.newDSO(path, undefined, "loading");
          dso.refcount = Infinity;
          dso.global = true;
          const exports = await Module.loadWebAssemblyModule(bytes, flags, path, {});
          Module.mergeLibSymbols(exports, path);
          dso.exports = exports;
        }
        const bytes = await heapBytes;
        if (bytes > Module.HEAP8.length && !Module.growMemory(bytes)) {
          throw new Error(`cannot grow the wasm memory to ${bytes} bytes`);
        }
        Module.removeRunDependency("riacho-preload-dynlibs");
      } catch (error) {
        fail(error);
      }
    };
    settings.preRun = [...(settings.preRun ?? []), preload];
    return createModule(settings);
  };
  return Promise.race([pyodide.loadPyodide({ ...config, createPyodideModule }), failed]);
}

// The heap's size in a snapshot: the file less its header (Pyodide's snapshot format: 32-bit
// words, the second is the heap's offset).
export function snapshotHeapBytes(snapshot) {
  return snapshot.length - new DataView(snapshot.buffer, snapshot.byteOffset, 8).getUint32(4, true);
}

// The path of every file under `dir`, sorted.
function pathsUnder(py, dir) {
  const paths = [];
  const walk = (at) => {
    for (const name of py.FS.readdir(at).filter((n) => n !== "." && n !== "..").sort()) {
      const path = `${at}/${name}`;
      if (py.FS.isDir(py.FS.stat(path).mode)) walk(path);
      else paths.push(path);
    }
  };
  walk(dir.replace(/\/$/, ""));
  return paths;
}

// Every file under `dir` (sorted): [[path, bytes], …].
function filesUnder(py, dir) {
  return pathsUnder(py, dir).map((path) => [path, py.FS.readFile(path)]);
}

// The page's package list with the packages it names by URL (its own wheel) made absolute.
function absolutePackages(packages, base) {
  return packages.map((name) => (name.includes("/") ? new URL(name, base).href : name));
}

// The packages the page names by URL, made absolute against `base`.
function urlPackages(packages, base) {
  return absolutePackages(packages, base).filter((name) => name.includes("/"));
}

// {url: sha256} of each wheel given by URL, as fetched now (revalidated: served no-cache).
async function wheelDigests(urls) {
  const digests = await Promise.all(urls.map(async (url) => [url, await sha256([await fetchBytes(url)])]));
  return Object.fromEntries(digests);
}

// --- a first visit's packages ------------------------------------------------------------------

// The wheels a normal boot installs: each locked package the list needs, then each it names by
// URL (the app's). [{name, url, integrity, channel}]: what Pyodide's loader would fetch, check
// and record.
export function wheelsToInstall(lock, packages, base) {
  const locked = lockedClosure(lock, packages).map((key) => {
    const entry = lock.packages[key];
    if (entry.install_dir !== "site") throw new Error(`${entry.name}: installed to ${entry.install_dir}`);
    const integrity = `sha256-${btoa(String.fromCharCode(...entry.sha256.match(/../g).map((h) => parseInt(h, 16))))}`;
    return { name: entry.name, url: new URL(entry.file_name, INDEX_URL).href, integrity, channel: "default channel" };
  });
  const byUrl = urlPackages(packages, base).map((url) => {
    const name = decodeURIComponent(url.slice(url.lastIndexOf("/") + 1)).split("-")[0].toLowerCase().replaceAll("_", "-");
    return { name, url, integrity: undefined, channel: url };
  });
  return [...locked, ...byUrl];
}

const RUNTIME_FILES = ["pyodide.asm.wasm", "python_stdlib.zip"].map((name) => INDEX_URL + name);

// The worker's download: the runtime's files first (the page's own downloads of them, joined
// through the HTTP cache), then each wheel, unpacked. [{name, channel, files: [[path in the wheel, bytes], …]}]
async function downloadInOrder({ packages, base, runtime }) {
  const lock = fetch(INDEX_URL + "pyodide-lock.json").then((response) => response.json());
  await Promise.allSettled(runtime.map((url) => fetch(url).then((response) => response.arrayBuffer())));
  return Promise.all(
    wheelsToInstall(await lock, packages, base).map(async ({ name, url, integrity, channel }) => {
      const response = await fetch(url, integrity ? { integrity } : {});
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
      const zip = new Uint8Array(await response.arrayBuffer());
      const members = zipMembers(zip).filter((m) => !m.name.endsWith("/"));
      if (members.some((m) => /^[^/]+\.data\//.test(m.name))) throw new Error(`${url}: a wheel with .data`);
      const files = await Promise.all(members.map(async (m) => [m.name, await unzipMember(zip, m)]));
      return { name, channel, files };
    }),
  );
}

let downloader = null; // NOTE: started by lookUpStored(), below

// This same module, run in a worker (it downloads, fetches or makes the snapshot: IN_WORKER).
// NOTE: its role ("download", "fetch", "snapshot") is its URL's fragment, which the request
// does not carry: a devtools panel (or a test) tells the workers apart.
function startWorker(role) {
  return new Worker(`${import.meta.url.split("#")[0]}#${role}`, { type: "module", name: role });
}

// A first visit's packages, downloaded and unpacked in a worker while the page starts the
// runtime; a promise of what downloadInOrder returns.
//
// Pyodide fetches the wheels at once, alongside the runtime; on a slow line every byte shares
// the line and the runtime, which Python waits for, arrives last. Then it unpacks each wheel in
// Python, after Python has started. Here the runtime's files come first and the wheels after,
// unpacked off the page's thread, so that once Python runs the files are only written and the
// shared library loaded. The worker is started as this module is first run (index.html runs it
// as soon as the page is parsed, before PyScript imports it): a worker starts only when the
// page's thread is free, and it is not once the runtime is starting.
async function downloadInWorker(packages, base) {
  // NOTE: the runtime's files the page has not received yet (by its resource timings): on a
  // fast line they are in already, and the worker need not wait for them
  const runtime = RUNTIME_FILES.filter((url) => !performance.getEntriesByName(url).length);
  const worker = downloader ?? startWorker("download");
  downloader = null;
  try {
    return await new Promise((resolve, reject) => {
      worker.onmessage = ({ data }) => (data.error ? reject(new Error(data.error)) : resolve(data.wheels));
      worker.onerror = (event) => reject(new Error(event.message ?? "the downloader failed"));
      worker.postMessage({ download: { packages, base, runtime } });
    });
  } finally {
    worker.terminate();
  }
}

// Install what downloadInWorker unpacked, as Pyodide's loader would: the files into
// site-packages, each shared library loaded (in a fixed order), each package recorded.
async function installUnpacked(py, wheels) {
  const sitePackages = py._api.sitepackages;
  const libs = [];
  for (const { files } of wheels) {
    for (const [name, bytes] of files) {
      const path = `${sitePackages}/${name}`;
      py.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
      py.FS.writeFile(path, bytes);
      if (name.endsWith(".so")) libs.push(path);
    }
  }
  py.runPython("import importlib\nimportlib.invalidate_caches()\n");
  for (const path of libs.sort()) await py._api.loadDynlib(path);
  for (const { name, channel } of wheels) py.loadedPackages[name] = channel;
}

// --- the stored snapshot -------------------------------------------------------------------------

// The stored snapshot's entry (its body is read later, while the runtime downloads), or null.
async function storedEntry() {
  const response = await (await caches.open(CACHE_NAME)).match(ENTRY_URL);
  return response ?? null;
}

async function forget() {
  try {
    await (await caches.open(CACHE_NAME)).delete(ENTRY_URL);
  } catch {
    // NOTE: nothing stored, or storage refused: either way nothing to restore next time
  }
}

function makeDelayMs() {
  const value = new URLSearchParams(location.search).get("bootSnapshotDelayMs");
  if (value === null) return MAKE_AFTER_READY_MS;
  if (/^\d{1,7}$/.test(value)) return Number(value);
  console.warn(`riacho: bootSnapshotDelayMs=${value} is not a whole number of ms; using ${MAKE_AFTER_READY_MS}`);
  return MAKE_AFTER_READY_MS;
}

// `callback` once the page is ready, makeDelayMs() later, in an idle moment.
function whenReadyAndIdle(callback) {
  const root = document.documentElement;
  const delay = makeDelayMs();
  const later = () =>
    setTimeout(() => requestIdleCallback(callback, { timeout: MAKE_IDLE_TIMEOUT_MS }), delay);
  if (root.hasAttribute("data-ready")) return later();
  const observer = new MutationObserver(() => {
    if (!root.hasAttribute("data-ready")) return;
    observer.disconnect();
    later();
  });
  observer.observe(root, { attributes: true, attributeFilter: ["data-ready"] });
}

// Read a stored body: the snapshot's array is handed over at once, empty (Pyodide wants it
// before it creates the runtime but reads it only once the runtime has started, after the
// preRun, which awaits `filled`), so it fills while the runtime downloads and compiles.
// `filled` resolves to {libs, files, loaded}.
export function readBody(response) {
  const number = (name) => Number(response.headers.get(name));
  const [heap, filesBytes, indexBytes] = [number(HEADERS.heap), number(HEADERS.files), number(HEADERS.index)];
  const sizes = JSON.parse(response.headers.get(HEADERS.libs) ?? "null");
  if (![heap, filesBytes, indexBytes].every(Number.isInteger) || heap < 8 || !Array.isArray(sizes)) {
    throw new Error("a stored snapshot without its layout");
  }
  const total = sizes.reduce((sum, [, length]) => sum + length, heap + filesBytes + indexBytes);
  const body = new Uint8Array(total);
  const filled = (async () => {
    const reader = response.body.getReader();
    let at = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (at + value.length > total) throw new Error(`a stored snapshot over ${total} bytes`);
      body.set(value, at);
      at += value.length;
    }
    if (at !== total) throw new Error(`a stored snapshot of ${at} bytes, expected ${total}`);
    const index = JSON.parse(new TextDecoder().decode(body.subarray(total - indexBytes)));
    let start = heap;
    const take = (length) => body.subarray(start, (start += length));
    const libs = sizes.map(([path, length]) => ({ path, bytes: take(length) }));
    const files = index.files.map(([path, length]) => [path, take(length)]);
    if (start !== total - indexBytes) throw new Error("a stored snapshot whose index does not match");
    return { libs, files, loaded: index.loaded };
  })();
  return { snapshot: body.subarray(0, heap), filled };
}

// --- the two boots ------------------------------------------------------------------------------

// Boot from the stored heap and write back the installed files (no package is fetched or
// unpacked); throws when it does not fit (then nothing of it is used).
async function restore(config, entry) {
  const parts = await bootParts();
  if (entry.headers.get(HEADERS.version) !== version) throw new Error("made for another runtime");
  if (entry.headers.get(HEADERS.lock) !== parts.lockDigest) throw new Error("made for other packages");
  const sameApp = wheelDigests(urlPackages(config.packages ?? [], document.baseURI)).then((now) => {
    if (JSON.stringify(now) !== entry.headers.get(HEADERS.wheels)) {
      throw new Error("the app changed since the snapshot");
    }
  });
  const { snapshot, filled } = readBody(entry);
  const libs = filled.then((body) => body.libs);
  const heapBytes = filled.then(() => snapshotHeapBytes(snapshot));
  for (const promise of [sameApp, libs, heapBytes]) promise.catch(() => {}); // NOTE: seen below
  const options = { ...config, packages: [], _loadSnapshot: snapshot };
  const py = await loadWithLibraries(options, parts.create, libs, heapBytes);
  await sameApp;
  const { files, loaded } = await filled;
  for (const [path, bytes] of files) {
    py.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    py.FS.writeFile(path, bytes);
  }
  Object.assign(py.loadedPackages, loaded);
  py.runPython(RESEED);
  // NOTE: Pyodide keeps the options it was given, and these hold the stored body (~50 MB)
  const kept = py._api?.config ?? {};
  delete kept._loadSnapshot;
  delete kept.createPyodideModule;
  return py;
}

// What restoring and making need: the lock and its digest, where packages go, the module
// factory (a promise).
async function bootParts() {
  const create = import(INDEX_URL + "pyodide.asm.mjs").then((module) => module.default);
  const response = await fetch(INDEX_URL + "pyodide-lock.json");
  if (!response.ok) throw new Error(`pyodide-lock.json: HTTP ${response.status}`);
  const lockText = await response.text();
  const lock = JSON.parse(lockText);
  const sitePackages = `/lib/python${lock.info.python.split(".").slice(0, 2).join(".")}/site-packages/`;
  return { lock, lockDigest: await sha256([lockText]), sitePackages, create };
}

// --- making it, in a worker --------------------------------------------------------------------

// The worker's work: an interpreter of its own, the packages, the pure modules, the heap, stored.
async function makeAndStore(packages) {
  const parts = await bootParts();
  const libs = sharedLibraries(parts.lock, packages, parts.sitePackages);
  libs.catch(() => {}); // NOTE: seen by loadWithLibraries
  const quiet = () => {};
  const config = { indexURL: INDEX_URL, packages, _makeSnapshot: true, stdout: quiet, stderr: quiet };
  const py = await loadWithLibraries(config, parts.create, libs);
  importPureModules(py, parts.sitePackages);
  // NOTE: what is in the heap now lives as long as the page: out of the cyclic collector's
  // sight (gc.freeze), so that no collection scans it again (a restored page's first full
  // collection fell in its first answer: frames of 67 ms)
  py.runPython("import gc\ngc.collect()\ngc.freeze()");
  const files = filesUnder(py, parts.sitePackages);
  // NOTE: the snapshot format wants loadedPackages empty: a restore starts from {} (and gets
  // these back once it has written the files)
  const loadedPackages = { ...py.loadedPackages };
  for (const name of Object.keys(loadedPackages)) delete py.loadedPackages[name];
  const snapshot = py.makeMemorySnapshot();
  const loaded = await libs;
  const index = new TextEncoder().encode(
    JSON.stringify({ files: files.map(([path, bytes]) => [path, bytes.length]), loaded: loadedPackages }),
  );
  const headers = {
    [HEADERS.version]: version,
    [HEADERS.lock]: parts.lockDigest,
    [HEADERS.wheels]: JSON.stringify(await wheelDigests(urlPackages(packages, self.location.href))),
    [HEADERS.heap]: String(snapshot.length),
    [HEADERS.libs]: JSON.stringify(loaded.map(({ path, bytes }) => [path, bytes.length])),
    [HEADERS.files]: String(files.reduce((sum, [, bytes]) => sum + bytes.length, 0)),
    [HEADERS.index]: String(index.length),
  };
  const body = new Blob([snapshot, ...loaded.map(({ bytes }) => bytes), ...files.map(([, bytes]) => bytes), index]);
  await (await caches.open(CACHE_NAME)).put(ENTRY_URL, new Response(body, { headers }));
}

const IN_WORKER = globalThis.WorkerGlobalScope !== undefined && globalThis instanceof WorkerGlobalScope;

if (IN_WORKER) {
  globalThis.onmessage = async ({ data }) => {
    if (data.fetch) {
      try {
        const bytes = await fetchBytes(data.fetch.url, { integrity: data.fetch.integrity });
        postMessage({ bytes }, [bytes.buffer]);
      } catch (error) {
        postMessage({ error: String(error) });
      }
      return;
    }
    if (data.download) {
      try {
        const wheels = await downloadInOrder(data.download);
        const buffers = new Set(wheels.flatMap(({ files }) => files.map(([, bytes]) => bytes.buffer)));
        postMessage({ wheels }, [...buffers]);
      } catch (error) {
        postMessage({ error: String(error) });
      }
      return;
    }
    try {
      await makeAndStore(data.packages);
      postMessage({ state: "stored" });
    } catch (error) {
      postMessage({ state: "not made", error: String(error) });
    }
  };
}

// A file fetched by a worker (checked against `integrity` there) and handed over whole: read,
// hashed and copied on the page's thread, a large body holds a frame back (Pygments' wheel,
// 4.5 MB, fetched at a streaming answer's first code block: a 25 ms task). The page's code
// reaches it as `globalThis.riachoInterpreter.fetchBytes(url, integrity)`: a Uint8Array.
function fetchInWorker(url, integrity) {
  const worker = startWorker("fetch");
  return new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => (data.error ? reject(new Error(data.error)) : resolve(data.bytes));
    worker.onerror = (event) => reject(new Error(event.message ?? "the fetching worker failed"));
    worker.postMessage({ fetch: { url: new URL(url, document.baseURI).href, integrity } });
  }).finally(() => worker.terminate());
}

if (!IN_WORKER) boot.fetchBytes = fetchInWorker;

// Start the worker (this same module) on the page's package list, made absolute.
function makeInWorker(packages) {
  const absolute = absolutePackages(packages, document.baseURI);
  const worker = startWorker("snapshot");
  worker.onmessage = ({ data }) => {
    report(data.state, data.error);
    worker.terminate();
  };
  worker.onerror = (event) => {
    report("not made", event.message);
    worker.terminate();
  };
  report("making");
  worker.postMessage({ packages: absolute });
}

// --- the page's boot --------------------------------------------------------------------------

export async function loadPyodide(options = {}) {
  const config = { ...options, indexURL: INDEX_URL };
  if (globalThis.caches === undefined || globalThis.crypto?.subtle === undefined) {
    report("off", new Error("no Cache Storage here (not a secure context)"));
    return normalBoot(config);
  }
  const entry = await stored;
  if (entry !== null) {
    try {
      const py = await restore(config, entry);
      report("restored");
      return py;
    } catch (error) {
      // NOTE: e.g. "Snapshot build id mismatch", or the app changed: a normal boot, which
      // makes a new one
      report("refused", error);
      await forget();
    }
  }
  const py = await normalBoot(config);
  report("booted");
  whenReadyAndIdle(() => makeInWorker(config.packages ?? []));
  return py;
}

// Start the runtime and install the packages: unpacked by the worker when it could, else by
// Pyodide's own loader (which then fetches, checks and installs them, and reports a failure).
async function normalBoot(config) {
  const packages = absolutePackages(config.packages ?? [], document.baseURI);
  const unpacked = downloadInWorker(packages, document.baseURI);
  unpacked.catch(() => {}); // NOTE: seen below
  const py = await pyodide.loadPyodide({ ...config, packages: [] });
  try {
    await installUnpacked(py, await unpacked);
    boot.install = "unpacked in a worker";
  } catch (error) {
    boot.install = `by Pyodide (${error})`;
    await py.loadPackage(packages, { messageCallback: () => {} });
  }
  return py;
}

// What this page will boot from, looked up as soon as index.html runs this module: the stored
// snapshot, or (none: a first visit) nothing, and then the worker of downloadInWorker starts at
// once. NOTE: a first visit asks only the local cache before booting as it always has.
const stored = IN_WORKER ? null : lookUpStored();

async function lookUpStored() {
  const entry = globalThis.caches === undefined ? null : await storedEntry().catch(() => null);
  if (entry === null) {
    try {
      preloadRuntime();
      downloader = startWorker("download");
    } catch (error) {
      // NOTE: the boot goes on without: downloadInWorker tries again, or Pyodide's loader installs
      console.info("riacho: no early download:", String(error));
    }
  }
  return entry;
}

// The runtime's wasm, asked for now as index.html asks for the rest. NOTE: only on a first
// visit: a page that preloads it compiles it afresh on every visit (Chromium then does not use
// the code it cached), which cost a restored visit ~0.2 s of its ~0.9.
function preloadRuntime() {
  const link = Object.assign(document.createElement("link"), { rel: "preload", as: "fetch", href: RUNTIME_FILES[0] });
  link.crossOrigin = "anonymous";
  document.head.append(link);
}
