// Riacho's service worker: the page's files for one build, kept on the device.
//
// PRECACHE below is written by the server (server/http/precache.py) or by `make dist`: every
// file the page boots from, with a hash of its content, and BUILD, a hash of them all. Install
// fetches each file (revalidated, so an unchanged file costs a 304), checks its hash and keeps
// the lot in the cache named after the build; a file that does not match fails the install, so
// a page never mixes two builds. It serves those files cache-first, navigations in its scope
// with the build's page. It answers nothing else: the API, POSTs and event streams go to the
// network untouched. A new build waits until the page asks for it (the update offer, boot.js).
"use strict";

const PRECACHE = /* PRECACHE */ { build: "unbuilt", files: [] } /* END PRECACHE */;
const PREFIX = "riacho-build-";
const CACHE = PREFIX + PRECACHE.build;
const SCOPE = new URL(self.registration.scope);
const KEPT = new Set(PRECACHE.files.map((file) => new URL(file.url, SCOPE).href));
const PAGE = new URL("index.html", SCOPE).href;

function hex(buffer) {
  return Array.from(new Uint8Array(buffer), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

async function fetchChecked(file) {
  const url = new URL(file.url, SCOPE).href;
  const response = await fetch(url, { cache: "no-cache", credentials: "same-origin" });
  if (!response.ok) throw new Error(`precache: ${url} answered ${response.status}`);
  const body = await response.clone().arrayBuffer();
  const digest = hex(await crypto.subtle.digest("SHA-256", body)).slice(0, file.revision.length);
  if (digest !== file.revision) throw new Error(`precache: ${url} is not this build's`);
  return [url, response];
}

async function precache() {
  const cache = await caches.open(CACHE);
  const missing = [];
  for (const file of PRECACHE.files) {
    const url = new URL(file.url, SCOPE).href;
    if (!(await cache.match(url, { ignoreVary: true }))) missing.push(file);
  }
  // NOTE: all checked before any is kept: a build changed mid-install keeps nothing of it
  const fetched = await Promise.all(missing.map(fetchChecked));
  await Promise.all(fetched.map(([url, response]) => cache.put(url, response)));
}

async function dropOtherBuilds() {
  const names = await caches.keys();
  // NOTE: only this worker's own caches: the boot snapshot and the device copies live beside
  await Promise.all(
    names.filter((name) => name.startsWith(PREFIX) && name !== CACHE).map((name) => caches.delete(name)),
  );
}

function keptUrl(request) {
  if (request.method !== "GET") return null;
  const url = new URL(request.url);
  if (url.origin !== SCOPE.origin) return null;
  if (request.mode === "navigate" && (url.pathname === SCOPE.pathname || url.href.split(/[?#]/)[0] === PAGE)) {
    return PAGE;
  }
  url.search = "";
  url.hash = "";
  return KEPT.has(url.href) ? url.href : null;
}

async function fromCache(request, url) {
  const cached = await caches.match(url, { cacheName: CACHE, ignoreVary: true });
  return cached ?? fetch(request);
}

self.addEventListener("install", (event) => event.waitUntil(precache()));
self.addEventListener("activate", (event) => event.waitUntil(dropOtherBuilds()));
self.addEventListener("fetch", (event) => {
  const url = keptUrl(event.request);
  if (url !== null) event.respondWith(fromCache(event.request, url));
});
self.addEventListener("message", (event) => {
  if (event.data && event.data.type === "riacho:update") self.skipWaiting();
});
