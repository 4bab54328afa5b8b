// This browser's boot snapshot: the heap of an interpreter that installed the packages and
// imported the app's pure modules, stored in Cache Storage with the installed files and shared
// libraries (makeAndStore, run by the boot's worker), and a boot restored from it (restore).
// See static/interpreter.mjs for what a restore checks. readBody and snapshotHeapBytes read the
// stored format (tests/js/snapshot.test.mjs).
import * as pyodide from "../vendor/pyodide/pyodide.mjs";
import { INDEX_URL, sha256, sharedLibraries, urlPackages, wheelDigests } from "./wheels.mjs";

export const version = pyodide.version;

const CACHE_NAME = "riacho-boot";
const ENTRY_URL = new URL("../boot-snapshot", import.meta.url).href; // a cache key, never fetched
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

// --- the stored entry ----------------------------------------------------------------------------

// The stored snapshot's entry (its body is read later, while the runtime downloads), or null.
export async function storedEntry() {
  const response = await (await caches.open(CACHE_NAME)).match(ENTRY_URL);
  return response ?? null;
}

export async function forget() {
  try {
    await (await caches.open(CACHE_NAME)).delete(ENTRY_URL);
  } catch {
    // NOTE: nothing stored, or storage refused: either way nothing to restore next time
  }
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

// The heap's size in a snapshot: the file less its header (Pyodide's snapshot format: 32-bit
// words, the second is the heap's offset).
export function snapshotHeapBytes(snapshot) {
  return snapshot.length - new DataView(snapshot.buffer, snapshot.byteOffset, 8).getUint32(4, true);
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

// --- restoring it, on the page ------------------------------------------------------------------

// Boot from the stored heap and write back the installed files (no package is fetched or
// unpacked); throws when it does not fit (then nothing of it is used).
export async function restore(config, entry) {
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

// --- making it, in the boot's worker -------------------------------------------------------------

// The worker's work: an interpreter of its own, the packages, the pure modules, the heap, stored.
export async function makeAndStore(packages) {
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
