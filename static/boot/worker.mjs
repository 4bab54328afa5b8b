// The boot's worker: one job per worker, asked for by a message with an explicit `kind`, and
// answered with one message (a failure as `{error}`; a snapshot's as `{state, error}`).
//   {kind: "download", packages, base, runtime}  a first visit's wheels, unpacked: {wheels}
//   {kind: "fetch", url, integrity}               a file's bytes, checked: {bytes}
//   {kind: "snapshot", packages}                  this browser's snapshot made and stored: {state}
// The page names the worker's role in its URL's fragment (static/interpreter.mjs, startWorker).
import { downloadInOrder, fetchBytes } from "./wheels.mjs";

const JOBS = {
  async download(request) {
    const wheels = await downloadInOrder(request);
    const buffers = new Set(wheels.flatMap(({ files }) => files.map(([, bytes]) => bytes.buffer)));
    return [{ wheels }, [...buffers]];
  },
  async fetch({ url, integrity }) {
    const bytes = await fetchBytes(url, { integrity });
    return [{ bytes }, [bytes.buffer]];
  },
  async snapshot({ packages }) {
    // NOTE: imported for this job only: a first visit's download worker starts its downloads
    // without loading Pyodide's module
    const { makeAndStore } = await import("./snapshot.mjs");
    await makeAndStore(packages);
    return [{ state: "stored" }, []];
  },
};

globalThis.onmessage = async ({ data }) => {
  try {
    const job = Object.hasOwn(JOBS, data.kind) ? JOBS[data.kind] : undefined;
    if (job === undefined) throw new Error(`the boot's worker has no job ${JSON.stringify(data.kind)}`);
    const [answer, transfer] = await job(data);
    postMessage(answer, transfer);
  } catch (error) {
    postMessage(data.kind === "snapshot" ? { state: "not made", error: String(error) } : { error: String(error) });
  }
};
