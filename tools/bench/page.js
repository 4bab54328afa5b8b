// Init script (tools/bench): in-page helpers for the benchmarks of the booted Riacho page.
// window.__benchPyodide resolves to the page's own Pyodide (PyScript's main onReady hook);
// window.riachoBench holds the plain-JS consumer, the stall monitor and the Stop timer.
(() => {
  if (!/^\/(index\.html)?$/.test(location.pathname)) return;

  window.__benchPyodide = new Promise((resolve, reject) => {
    // NOTE: the same module URL as the page's <script type="module">, so the same instance.
    import("/static/vendor/pyscript/core.js").then(({ hooks }) => {
      hooks.main.onReady.add((wrap) => resolve(wrap.interpreter));
    }, reject);
  });

  // The bytes of `count` text events of run `runId` (seq 1..count) and a terminal done event.
  const buildStream = (runId, count) => {
    const words = ["Olá ", "riacho ", "stream ", "piece ", "by ", "piece, ", "ação ", "word\n"];
    const frames = [];
    for (let seq = 1; seq <= count; seq++) {
      const text = words[seq % words.length];
      const event = { type: "text", text, runId, seq, done: false };
      frames.push(`id: ${seq}\ndata: ${JSON.stringify(event)}\n\n`);
    }
    const done = { type: "done", messageId: "msg_bench", stopReason: "stop", runId, seq: count + 1, done: true };
    frames.push(`id: ${count + 1}\ndata: ${JSON.stringify(done)}\n\n`);
    return new TextEncoder().encode(frames.join(""));
  };

  // The data of one frame: its data lines joined with LF ("" if it has none).
  const frameData = (frame) => {
    let data = null;
    for (const line of frame.split("\n")) {
      if (!line.startsWith("data:")) continue;
      const value = line.slice(line[5] === " " ? 6 : 5);
      data = data === null ? value : `${data}\n${value}`;
    }
    return data;
  };

  const isEvent = (e) =>
    e !== null && typeof e === "object" && typeof e.type === "string" &&
    typeof e.runId === "string" && Number.isInteger(e.seq) && e.seq >= 1 &&
    typeof e.done === "boolean";

  // The plain-JS consumer: TextDecoder stream, frames, JSON.parse, a shape check, append.
  const consume = (bytes, read) => {
    const decoder = new TextDecoder();
    const state = { status: "connecting", lastSeq: 0, text: "", events: 0 };
    let buffer = "";
    for (let i = 0; i < bytes.length; i += read) {
      buffer += decoder.decode(bytes.subarray(i, i + read), { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const data = frameData(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (data === null) continue;
        const event = JSON.parse(data);
        if (!isEvent(event) || event.seq <= state.lastSeq) continue;
        state.lastSeq = event.seq;
        state.events += 1;
        if (event.type === "text" && typeof event.text === "string") {
          state.status = "receiving";
          state.text += event.text;
        } else if (event.type === "done") {
          state.status = "completed";
        }
      }
    }
    return state;
  };

  // Seconds for the JS consumer over the stream in window.__benchStream (set by prepare()).
  const timeConsumer = (read) => {
    const start = performance.now();
    const state = consume(window.__benchStream, read);
    const seconds = (performance.now() - start) / 1000;
    return { seconds, events: state.events, status: state.status, chars: state.text.length };
  };

  const prepare = (runId, count) => {
    window.__benchStream = buildStream(runId, count);
    return window.__benchStream.length;
  };

  // Long tasks and animation-frame gaps from now on, plus when the answer's status changed.
  const startStallMonitor = () => {
    const monitor = { longTasks: [], frames: [], status: {}, running: true };
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) monitor.longTasks.push([entry.startTime, entry.duration]);
    }).observe({ type: "longtask" });
    let last = null;
    const tick = (now) => {
      if (last !== null) monitor.frames.push([last, now - last]);
      last = now;
      if (monitor.running) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
    const seen = () => {
      const answers = document.querySelectorAll("[data-role=assistant]");
      const status = answers.length ? answers[answers.length - 1].dataset.status : undefined;
      if (status && !(status in monitor.status)) monitor.status[status] = performance.now();
    };
    new MutationObserver(seen).observe(document.querySelector("#messages"), {
      subtree: true, childList: true, attributes: true, attributeFilter: ["data-status"],
    });
    window.__benchStall = monitor;
  };

  // What the monitor saw between the answer's first "receiving" and its "completed".
  const stopStallMonitor = () => {
    const m = window.__benchStall;
    m.running = false;
    const from = m.status.receiving ?? 0;
    const to = m.status.completed ?? performance.now();
    const inside = ([start, length]) => start + length >= from && start <= to;
    const tasks = m.longTasks.filter(inside).map(([, length]) => length);
    const frames = m.frames.filter(inside);
    // Frames over `over` ms in each quarter of the stream (by the frame's end time).
    const quarters = (over) => {
      const counts = [0, 0, 0, 0];
      for (const [start, length] of frames) {
        const at = Math.min(Math.max((start + length - from) / (to - from), 0), 0.999);
        if (length > over) counts[Math.floor(at * 4)] += 1;
      }
      return counts;
    };
    return {
      from, to, longTasks: tasks, frameGaps: frames.map(([, length]) => length),
      quartersOver50: quarters(50),
    };
  };

  // Stop click (capture phase, before the page's own listener) to "cancelling" and "confirmed".
  const armStopTimer = () => {
    const timer = { click: null, cancelling: null, confirmed: null };
    const last = () => {
      const answers = document.querySelectorAll("[data-role=assistant]");
      return answers[answers.length - 1];
    };
    const onClick = (event) => {
      if (timer.click === null && event.target.closest("[data-action=stop]")) {
        timer.click = performance.now();
      }
    };
    document.addEventListener("click", onClick, true);
    const observer = new MutationObserver(() => {
      const answer = last();
      if (timer.click === null || !answer) return;
      const now = performance.now();
      if (timer.cancelling === null && ["cancelling", "cancelled"].includes(answer.dataset.status)) {
        timer.cancelling = now;
      }
      if (timer.confirmed === null && answer.querySelector("[data-cancel=confirmed]")) {
        timer.confirmed = now;
        observer.disconnect();
        document.removeEventListener("click", onClick, true);
      }
    });
    observer.observe(document.querySelector("#messages"), {
      subtree: true, childList: true, attributes: true,
    });
    window.__benchStop = timer;
  };

  window.riachoBench = { prepare, timeConsumer, startStallMonitor, stopStallMonitor, armStopTimer };
})();
