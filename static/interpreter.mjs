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
//
// The boot is five modules: this one (the page's entry: which boot, the workers, falling back),
// boot/snapshot.mjs (the stored heap: made, read, restored), boot/wheels.mjs (the packages: from
// the lock, downloaded, unpacked, installed), boot/zip.mjs (the wheels' zip reader) and
// boot/worker.mjs (the boot's worker: one job per message, named by its `kind`). The pure parts
// are tested under Node (tests/js/).
import { forget, restore, storedEntry } from "./boot/snapshot.mjs";
import { INDEX_URL, RUNTIME_FILES, absolutePackages, installUnpacked } from "./boot/wheels.mjs";
// NOTE: wheels.mjs's own import, named here too so that every module of the boot is asked for
// at once, one level below this one: a chain of imports costs a request per level.
import "./boot/zip.mjs";
import * as pyodide from "./vendor/pyodide/pyodide.mjs";

export const version = pyodide.version;

const WORKER_URL = new URL("./boot/worker.mjs", import.meta.url).href;
// NOTE: the making costs a worker about one boot's CPU: not while the page itself starts.
// `?bootSnapshotDelayMs=N` overrides it for one page load (the end-to-end tests use 0).
const MAKE_AFTER_READY_MS = 5000;
const MAKE_IDLE_TIMEOUT_MS = 5000;

const boot = (globalThis.riachoInterpreter = { snapshot: "off", history: [] });

function report(state, error) {
  boot.snapshot = state;
  boot.history.push(state);
  if (error !== undefined) {
    boot.error = String(error);
    console.info(`riacho: boot snapshot ${state}:`, String(error));
  }
}

// --- the boot's worker ---------------------------------------------------------------------------

// The boot's worker (static/boot/worker.mjs: it downloads, fetches or makes the snapshot).
// NOTE: its role ("download", "fetch", "snapshot") is its URL's fragment, which the request
// does not carry: a devtools panel (or a test) tells the workers apart.
function startWorker(role) {
  return new Worker(`${WORKER_URL}#${role}`, { type: "module", name: role });
}

let downloader = null; // NOTE: started by lookUpStored(), below

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
      worker.postMessage({ kind: "download", packages, base, runtime });
    });
  } finally {
    worker.terminate();
  }
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
    worker.postMessage({ kind: "fetch", url: new URL(url, document.baseURI).href, integrity });
  }).finally(() => worker.terminate());
}

boot.fetchBytes = fetchInWorker;

// Start the boot's worker on the page's package list, made absolute.
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
  worker.postMessage({ kind: "snapshot", packages: absolute });
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
const stored = lookUpStored();

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

