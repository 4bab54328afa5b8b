// Runs tools/trace.py inside Pyodide under Node: node tools/trace.mjs INDEX_DIR ROOT OUT PACKAGE...
// INDEX_DIR holds the vendored runtime and its pyodide-lock.json (the packages load through it,
// hash-checked, as in the browser); ROOT is the repository; OUT the JSON list written. Paths are
// absolute host paths; the host root is mounted at /host inside Pyodide.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const [indexDir, root, out, ...packages] = process.argv.slice(2);
const { loadPyodide } = await import(join(indexDir, "pyodide.mjs"));
try {
  // NOTE: the page's packages load with the runtime, as PyScript does it ("passthrough").
  const pyodide = await loadPyodide({ indexURL: indexDir + "/", packages });
  pyodide.mountNodeFS("/host", "/");
  pyodide.runPython(readFileSync(join(here, "trace.py"), "utf8"));
  const paths = [root, out].map((path) => `Path(${JSON.stringify("/host" + path)})`);
  await pyodide.runPythonAsync(`await main(${paths.join(", ")})`);
  // NOTE: the app's timers (a run's first-event timeout) would keep Node alive for seconds.
  process.exit(0);
} catch (error) {
  // NOTE: the message only: Node would otherwise print a line of the minified runtime.
  console.error(`trace: ${error.message ?? error}`);
  process.exit(1);
}
