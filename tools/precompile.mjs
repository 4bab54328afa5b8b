// Runs tools/precompile.py inside Pyodide under Node: node tools/precompile.mjs SRC DST [SRC DST ...]
// Paths are absolute host paths; the host root is mounted at /host inside Pyodide.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const { loadPyodide } = await import(join(here, "..", "node_modules", "pyodide", "pyodide.mjs"));
const pyodide = await loadPyodide({ indexURL: join(here, "..", "node_modules", "pyodide") + "/" });
pyodide.mountNodeFS("/host", "/");
const args = process.argv.slice(2).map((path) => "/host" + path);
pyodide.runPython("import sys; sys.argv = ['precompile'] + " + JSON.stringify(args));
pyodide.runPython(readFileSync(join(here, "precompile.py"), "utf8"));
