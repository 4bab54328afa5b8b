"""What the tests, the bench and the screenshots ask a page about its service worker (sw.js)."""

from __future__ import annotations

# A promise that resolves once the page's worker is installed and activated: the page's next
# load is then controlled by it.
WORKER_ACTIVE = """navigator.serviceWorker.ready.then((registration) => new Promise((resolve) => {
  const worker = registration.active;
  if (worker.state === "activated") return resolve(true);
  worker.addEventListener("statechange", () => worker.state === "activated" && resolve(true));
}))"""
