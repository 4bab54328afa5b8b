// Riacho — the composer before Python starts.
//
// The page shell is interactive from first paint: the user can type at once, and a prompt sent
// before Python is ready is kept, shown as queued, and handed to Python when it is (see
// app/browser/page.py). take() removes these listeners and returns the queue in one step, so a
// prompt is sent exactly once: by Python, after it has taken over the composer.
const form = document.querySelector("#composer");
const prompt = document.querySelector("textarea[name=prompt]");
const column = document.querySelector("#message-column");
const queued = [];

function queue(event) {
  event.preventDefault();
  const text = prompt.value;
  if (!text.trim() || queued.length) return; // NOTE: one prompt waits; the rest stays typed
  queued.push(text);
  prompt.value = "";
  const note = document.createElement("article");
  note.className = "message queued";
  note.setAttribute("data-queued", "");
  const bubble = document.createElement("div");
  bubble.className = "bubble";
  bubble.textContent = text;
  const status = document.createElement("p");
  status.className = "queued-status";
  status.textContent = "Queued: it is sent as soon as Riacho has started";
  note.append(bubble, status);
  column.replaceChildren(note);
}

function onKey(event) {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) queue(event);
}

form.addEventListener("submit", queue);
prompt.addEventListener("keydown", onKey);
prompt.disabled = false;
// NOTE: the first Tab stop: past the chat list, straight to the message box
document.querySelector("[data-action=skip-to-composer]").addEventListener("click", () => prompt.focus());
document.querySelector("[data-action=send]").disabled = false;

// The page's first reads, started now so that Python, once booted, finds them answered: the
// config, then the session, then (signed in) the models and the chat list. Each is a promise of
// {url, response} or null (not started, or failed: Python then fetches it itself, once, and
// meets the failure there). Each is handed out once (app/browser/net.py); the session is never
// asked for twice, since Python waits for this one before it would ask. Same options as net.py.
const READS = ["./config.json", "/api/session", "/api/models", "/api/chats"];
const early = new Map();
const settle = new Map();
for (const path of READS) early.set(path, new Promise((resolve) => settle.set(path, resolve)));

async function read(path, url) {
  try {
    const response = await fetch(url, { method: "GET", credentials: "include", cache: "no-store" });
    settle.get(path)({ url, response: response.clone() });
    return response;
  } catch {
    settle.get(path)(null);
    return null;
  }
}

async function readEarly() {
  let base = "";
  const config = await read("./config.json", "./config.json");
  try {
    const apiBase = config && config.ok ? (await config.json()).apiBase : "";
    base = typeof apiBase === "string" ? apiBase.replace(/\/+$/, "") : "";
  } catch {} // NOTE: no valid config.json means the same origin, as in Python
  const session = await read("/api/session", base + "/api/session");
  if (!session || !session.ok) {
    for (const path of ["/api/models", "/api/chats"]) settle.get(path)(null);
    return;
  }
  for (const path of ["/api/models", "/api/chats"]) read(path, base + path);
}
readEarly();

// The service worker (sw.js) keeps this build's files on the device; registered once the page
// is ready, so that its install (which revalidates every file) never competes with the boot.
// A new build installs beside the old one and waits: the page offers it ("A new version is
// ready") and loads it when asked, never while an answer is arriving or stopping.
const offer = document.querySelector("#app-update");
const STREAMING = "[data-status=connecting],[data-status=receiving],[data-status=cancelling]";

function showOffer(registration) {
  const waiting = () => registration.waiting && navigator.serviceWorker.controller;
  const update = () => {
    offer.hidden = !waiting() || document.querySelector(STREAMING) !== null;
  };
  new MutationObserver(update).observe(column, {
    subtree: true,
    childList: true,
    attributes: true,
    attributeFilter: ["data-status"],
  });
  offer.querySelector("[data-action=update-app]").addEventListener("click", () => {
    if (!waiting() || document.querySelector(STREAMING) !== null) return;
    navigator.serviceWorker.addEventListener("controllerchange", () => location.reload());
    registration.waiting.postMessage({ type: "riacho:update" });
  });
  update();
  return update;
}

async function registerWorker() {
  const registration = await navigator.serviceWorker.register("./sw.js", { updateViaCache: "none" });
  if (!registration) return; // NOTE: a browser that blocks service workers answers nothing
  const update = showOffer(registration);
  const watch = (worker) => worker && worker.addEventListener("statechange", update);
  watch(registration.installing);
  registration.addEventListener("updatefound", () => watch(registration.installing));
}

function whenReady(run) {
  const root = document.documentElement;
  if (root.hasAttribute("data-ready")) return run();
  const observer = new MutationObserver(() => {
    if (!root.hasAttribute("data-ready")) return;
    observer.disconnect();
    run();
  });
  observer.observe(root, { attributes: true, attributeFilter: ["data-ready"] });
}

if ("serviceWorker" in navigator) {
  whenReady(() => registerWorker().catch((error) => console.warn("riacho: no service worker:", error)));
}

window.riachoBoot = {
  // One early read: a promise of {url, response} or null; null again once handed out.
  early(path) {
    const promise = early.get(path) ?? Promise.resolve(null);
    early.delete(path);
    return promise;
  },
  // Python takes over: the prompts queued so far (at most one), and no more listeners here.
  take() {
    form.removeEventListener("submit", queue);
    prompt.removeEventListener("keydown", onKey);
    for (const note of column.querySelectorAll("[data-queued]")) note.remove();
    return queued.splice(0);
  },
};
