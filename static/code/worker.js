// Riacho's code sandbox, the worker's side (SPEC §13): its own Pyodide, started from the runtime
// files the page already had (handed over as bytes: this worker may connect nowhere), one
// namespace kept across runs, output posted as printed (batched: at most one message per ~16 ms),
// tracebacks without the sandbox's own frames, /mnt/data/ and /mnt/out/.
// Its source is given to the frame as text and run from a blob of the frame's opaque origin; the
// runtime's two modules are evaluated from text ('unsafe-eval', which the page's CSP already
// allows Pyodide), since a blob's module imports would need a wider script-src.
// NOTE: output is posted at once while it is sparse (up to POSTS_PER_WINDOW posts per BATCH_MS
// window), then batched: a flood of prints costs the page one message per window, not one per
// line. Batched text waits for the next write or the run's end (the worker's event loop is busy
// while Python runs, so no timer can flush it): only the tail of a flood can wait like that.
const BATCH_MS = 16;
const WHEELS_DIR = "/lib/riacho-code-wheels";
const POSTS_PER_WINDOW = 4;
let windowStart = 0;
let postsInWindow = 0;
let py = null;
let started = null;
const streams = { stdout: "", stderr: "" };
let order = [];

function moduleFromText(text, base, exported) {
  const body = text.replaceAll("import.meta.url", JSON.stringify(base)).replace(exported.from, exported.to);
  return new Function(body)();
}

async function boot({ runtime, interrupt, base }) {
  const decoder = new TextDecoder();
  const text = (name) => decoder.decode(runtime[name]);
  const createPyodideModule = moduleFromText(text("pyodide.asm.mjs"), base, {
    from: "export default _createPyodideModule;",
    to: "return _createPyodideModule;",
  });
  const { loadPyodide } = moduleFromText(text("pyodide.mjs"), base, {
    from: /export\{(\w+) as loadPyodide,(\w+) as version\};?/,
    to: "return {loadPyodide: $1};",
  });
  const files = { "pyodide.asm.wasm": runtime["pyodide.asm.wasm"], "python_stdlib.zip": runtime["python_stdlib.zip"] };
  const ownFetch = self.fetch;
  // NOTE: Pyodide fetches its wasm and standard library by URL; here they are bytes in memory
  self.fetch = async (url) => {
    const name = String(url).split("/").pop();
    if (!(name in files)) throw new TypeError("this sandbox has no network");
    const type = name.endsWith(".wasm") ? "application/wasm" : "application/zip";
    return new Response(files[name], { headers: { "Content-Type": type } });
  };
  try {
    py = await loadPyodide({
      indexURL: base,
      createPyodideModule,
      lockFileContents: text("pyodide-lock.json"),
      packageBaseUrl: base,
      stdout: () => {},
      stderr: () => {},
    });
  } finally {
    self.fetch = ownFetch;
  }
  if (interrupt) py.setInterruptBuffer(interrupt);
  py.setStdout({ write: (bytes) => printed("stdout", bytes) });
  py.setStderr({ write: (bytes) => printed("stderr", bytes) });
  py.FS.mkdirTree(WHEELS_DIR);
  for (const [name, bytes] of Object.entries(runtime.wheels ?? {})) py.FS.writeFile(`${WHEELS_DIR}/${name}`, new Uint8Array(bytes));
  py.globals.set("_riacho_packages", py.toPy(runtime.packages ?? {}));
  py.runPython(SANDBOX_PY);
}

const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };

function printed(stream, bytes) {
  const text = decoders[stream].decode(bytes, { stream: true });
  if (order.length === 0 || order[order.length - 1][0] !== stream) order.push([stream, text]);
  else order[order.length - 1][1] += text;
  const now = performance.now();
  if (now - windowStart >= BATCH_MS) {
    windowStart = now;
    postsInWindow = 0;
  }
  if (postsInWindow < POSTS_PER_WINDOW) flush();
  return bytes.length;
}

function flush() {
  if (order.length === 0) return;
  postsInWindow += 1;
  postMessage({ kind: "printed", runId: current, chunks: order });
  order = [];
}

let current = null;

async function run({ runId, code, files }) {
  current = runId;
  for (const file of files ?? []) py.FS.writeFile(`/mnt/data/${file.name}`, new Uint8Array(file.bytes));
  postMessage({ kind: "started", runId });
  const runner = py.globals.get("_riacho_run");
  let outcome;
  try {
    outcome = await runner(code);
  } finally {
    runner.destroy();
  }
  flush();
  const [status, text] = outcome.toJs();
  outcome.destroy();
  postMessage({ kind: "wrote", runId, files: outFiles() });
  postMessage({ kind: status, runId, traceback: text });
}

function outFiles() {
  const found = [];
  for (const name of py.FS.readdir("/mnt/out")) {
    if (name === "." || name === "..") continue;
    const path = `/mnt/out/${name}`;
    if (!py.FS.isFile(py.FS.stat(path).mode)) continue;
    const bytes = py.FS.readFile(path);
    found.push({ name, bytes: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) });
    py.FS.unlink(path);
  }
  return found;
}

self.onmessage = ({ data }) => {
  if (data.kind === "boot") {
    started = boot(data).then(
      () => postMessage({ kind: "ready" }),
      (error) => postMessage({ kind: "failed", error: String(error) }),
    );
  } else if (data.kind === "run") {
    started.then(() => run(data)).catch((error) => postMessage({ kind: "finished", runId: data.runId, traceback: String(error) }));
  }
};

// The sandbox's Python: one namespace for every run, the code compiled as "<code>" (so a
// traceback shows its lines), top-level await allowed, the sandbox's own frame left out.
const SANDBOX_PY = String.raw`
import ast, linecache, os, sys, traceback, types
os.makedirs("/mnt/data", exist_ok=True)
os.makedirs("/mnt/out", exist_ok=True)
os.chdir("/mnt/data")
_riacho_ns = {"__name__": "__main__", "__builtins__": __builtins__}


class _RiachoWheels:
    """Installs a vendored pure wheel the first time one of its modules is imported."""

    def find_spec(self, name, path=None, target=None):
        import importlib, importlib.machinery, site, zipfile
        wheel = _riacho_packages.get(name)
        if wheel is None or path is not None:
            return None
        for module in [m for m, w in _riacho_packages.items() if w == wheel]:
            del _riacho_packages[module]
        with zipfile.ZipFile(f"/lib/riacho-code-wheels/{wheel}") as archive:
            archive.extractall(site.getsitepackages()[0])
        importlib.invalidate_caches()
        return importlib.machinery.PathFinder.find_spec(name)


sys.meta_path.append(_RiachoWheels())
_riacho_count = [0]

async def _riacho_run(source):
    _riacho_count[0] += 1
    name = f"<code {_riacho_count[0]}>" if _riacho_count[0] > 1 else "<code>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    try:
        code = compile(source, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(code, _riacho_ns)
        if isinstance(result, types.CoroutineType):
            await result
    except KeyboardInterrupt:
        return ["stopped", ""]
    except BaseException as error:
        tb = error.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != name:
            tb = tb.tb_next
        text = "".join(traceback.format_exception(type(error), error, tb))
        return ["finished", text]
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return ["finished", ""]
`;
