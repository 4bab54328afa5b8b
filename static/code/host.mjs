// Riacho's code sandbox, the page's side (SPEC §13): the frame, the runtime's bytes, and the
// messages. The page's Python (app/browser/code_runner.py) imports this module on the first Run
// and calls `createSandbox(onEvents)`; it gets each animation frame's messages as one array.
//
// The frame is <iframe sandbox="allow-scripts" srcdoc>: an opaque origin (no cookies, no
// storage, no same-origin access to this page), with a CSP of its own that refuses every
// connection (`connect-src 'none'`) on top of the page's (which a srcdoc frame inherits). Only
// postMessage crosses. The runtime files are the ones the page booted from (the HTTP cache or
// the service worker has them: no byte more at boot, and it works offline); they are fetched
// here and handed over as bytes, because the frame may fetch nothing.
const FRAME_URL = new URL("./frame.js", import.meta.url).href;
const WORKER_URL = new URL("./worker.js", import.meta.url).href;
const INDEX_URL = new URL("../vendor/pyodide/", import.meta.url).href;
// NOTE: the whole standard library (the page's own is trimmed to what the page imports), made
// by tools/vendor.py; fetched at the first Run, never at boot
const CODE_URL = new URL("../vendor/code/", import.meta.url).href;
const TEXT_FILES = ["pyodide.mjs", "pyodide.asm.mjs", "pyodide-lock.json"];
const BYTE_FILES = ["pyodide.asm.wasm", "python_stdlib.zip"];
const MIME = { png: "image/png", svg: "image/svg+xml", csv: "text/csv", txt: "text/plain", json: "application/json", html: "text/html" };

// The frame's only inline script: it evaluates frame.js, which the page posts it. NOTE: not a
// <script src>: a sandboxed frame (an opaque origin) is not served by the page's service
// worker, so it could not load a file offline. The page's CSP, which the srcdoc inherits, allows
// exactly this text by its hash (server/http/security.py; tests/unit/test_code_sandbox.py).
export const BOOTSTRAP =
  'addEventListener("message",function f(e){if(e.source!==parent||e.data.kind!=="frame")return;' +
  'removeEventListener("message",f);(0,eval)(e.data.source)});parent.postMessage({kind:"frame-loaded"},"*")';

function srcdoc() {
  const policy = [
    "default-src 'none'",
    "script-src 'unsafe-inline' 'unsafe-eval' 'wasm-unsafe-eval'",
    "worker-src blob:",
    "connect-src 'none'",
  ].join("; ");
  return `<!doctype html><meta http-equiv="Content-Security-Policy" content="${policy}"><script>${BOOTSTRAP}</script>`;
}

async function textOf(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return response.text();
}

async function bytesOf(name) {
  const base = name === "python_stdlib.zip" ? CODE_URL : INDEX_URL;
  const response = await fetch(base + name);
  if (!response.ok) throw new Error(`${name}: ${response.status}`);
  return response.arrayBuffer();
}

// The pure wheels of tools/code-packages.toml (tools/code_packages.py): file name → bytes, and
// module → file. Handed over whole (they are small); the worker installs one at a first import.
async function codePackages() {
  const response = await fetch(CODE_URL + "packages.json");
  if (!response.ok) return { wheels: {}, packages: {} };
  const packages = (await response.json()).wheels;
  const files = [...new Set(Object.values(packages))];
  const read = async (file) => [file, await (await fetch(CODE_URL + "wheels/" + file)).arrayBuffer()];
  return { wheels: Object.fromEntries(await Promise.all(files.map(read))), packages };
}

async function runtimeFiles() {
  const names = [...TEXT_FILES, ...BYTE_FILES];
  const [files, { wheels, packages }] = await Promise.all([
    Promise.all(names.map(async (name) => [name, await bytesOf(name)])),
    codePackages(),
  ]);
  return { ...Object.fromEntries(files), wheels, packages };
}

function mimeOf(name) {
  return MIME[name.split(".").pop().toLowerCase()] ?? "application/octet-stream";
}

// A file the code wrote, as a URL the page can show and offer for download.
function asDownload(file) {
  const mime = mimeOf(file.name);
  const url = URL.createObjectURL(new Blob([file.bytes], { type: mime }));
  return { name: file.name, mime, size: file.bytes.byteLength, url };
}

export function createSandbox(onEvents) {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  // NOTE: lets the frame be cross-origin isolated where the page is (the interrupt buffer)
  frame.setAttribute("allow", "cross-origin-isolated");
  frame.setAttribute("aria-hidden", "true");
  frame.tabIndex = -1;
  frame.className = "code-sandbox";
  frame.hidden = true;
  let queue = [];
  let scheduled = false;
  let ready = null;
  const frameReady = new Promise((resolve) => (ready = resolve));
  const frameSource = textOf(FRAME_URL);
  const deliver = () => {
    scheduled = false;
    const batch = queue;
    queue = [];
    if (batch.length) onEvents(batch);
  };
  const onMessage = (event) => {
    if (event.source !== frame.contentWindow) return;
    const data = event.data;
    if (data.kind === "frame-loaded") {
      frameSource.then((source) => frame.contentWindow.postMessage({ kind: "frame", source }, "*"));
      return;
    }
    if (data.kind === "frame-ready") return ready(data.isolated);
    const item = data.kind === "wrote" ? { ...data, files: data.files.map(asDownload) } : data;
    queue.push(item);
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(deliver);
    }
  };
  addEventListener("message", onMessage);
  frame.srcdoc = srcdoc();
  document.body.append(frame);
  const booted = frameReady.then(async (isolated) => {
    const runtime = await runtimeFiles();
    const transfer = BYTE_FILES.map((name) => runtime[name]).concat(Object.values(runtime.wheels));
    frame.contentWindow.postMessage({ kind: "boot", runtime, base: INDEX_URL, workerSource: await textOf(WORKER_URL) }, "*", transfer);
    return isolated;
  });
  booted.catch((error) => {
    queue.push({ kind: "failed", error: String(error) });
    deliver();
  });
  return {
    booted,
    run(runId, code, files = []) {
      booted.then(() => frame.contentWindow.postMessage({ kind: "run", runId, code, files }, "*", files.map((f) => f.bytes)));
    },
    interrupt() {
      frame.contentWindow?.postMessage({ kind: "interrupt" }, "*");
    },
    end() {
      removeEventListener("message", onMessage);
      frame.remove();
    },
  };
}
