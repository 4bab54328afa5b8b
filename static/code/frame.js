// Riacho's code sandbox, the frame's side (SPEC §13). It runs in <iframe sandbox="allow-scripts"
// srcdoc> (static/code/host.mjs makes it): an opaque origin, so no cookies, no storage and no
// same-origin access to the page or its API; the srcdoc's CSP refuses every connection. The page
// hands it the runtime's files and the worker's source; it starts the worker (a blob of its own
// origin) and passes messages both ways. Where the frame is cross-origin isolated it makes the
// interrupt buffer (a SharedArrayBuffer of its own agent cluster) and writes 2 to it on Stop.
"use strict";
(() => {
  let worker = null;
  let interrupt = null;

  function boot(message) {
    const source = new Blob([message.workerSource], { type: "text/javascript" });
    worker = new Worker(URL.createObjectURL(source), { name: "riacho-code" });
    interrupt = self.crossOriginIsolated ? new Int32Array(new SharedArrayBuffer(4)) : null;
    worker.onmessage = ({ data }) => parent.postMessage(data, "*");
    worker.onerror = (event) => parent.postMessage({ kind: "failed", error: event.message || "the worker failed" }, "*");
    const { runtime } = message;
    const transfer = Object.values(runtime).concat(Object.values(runtime.wheels)).filter((value) => value instanceof ArrayBuffer);
    worker.postMessage({ kind: "boot", runtime: message.runtime, interrupt, base: message.base }, transfer);
  }

  addEventListener("message", (event) => {
    if (event.source !== parent) return;
    const message = event.data;
    if (message.kind === "boot") boot(message);
    else if (message.kind === "interrupt") {
      if (interrupt !== null) Atomics.store(interrupt, 0, 2);
    } else if (worker !== null) {
      if (message.kind === "run" && interrupt !== null) Atomics.store(interrupt, 0, 0);
      const transfer = (message.files ?? []).map((file) => file.bytes);
      worker.postMessage(message, transfer);
    }
  });
  parent.postMessage({ kind: "frame-ready", isolated: self.crossOriginIsolated === true }, "*");
})();
