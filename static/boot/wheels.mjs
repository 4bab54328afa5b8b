// The packages a boot installs: what Pyodide's lock says a page's list needs, each wheel
// downloaded and unpacked (in the boot's worker), installed into the runtime's file system, and
// the shared libraries a snapshot loads first. lockedClosure and wheelsToInstall are pure
// (tests/js/wheels.test.mjs).
import { unzipMember, zipMembers } from "./zip.mjs";

export const INDEX_URL = new URL("../vendor/pyodide/", import.meta.url).href;
export const RUNTIME_FILES = ["pyodide.asm.wasm", "python_stdlib.zip"].map((name) => INDEX_URL + name);

export async function fetchBytes(url, init = {}) {
  const response = await fetch(url, init);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

export async function sha256(chunks) {
  const parts = [];
  for (const chunk of chunks) parts.push(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk);
  const digest = await crypto.subtle.digest("SHA-256", await new Blob(parts).arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

// Every locked package the page's list needs (names; paths such as the app's wheel are pure
// Python and skipped), with their dependencies, sorted by name.
export function lockedClosure(lock, requested) {
  const found = new Set();
  const visit = (name) => {
    const key = name.toLowerCase().replaceAll("_", "-");
    if (found.has(key)) return;
    const entry = lock.packages[key];
    if (entry === undefined) throw new Error(`${name} is not in pyodide-lock.json`);
    found.add(key);
    for (const dependency of entry.depends ?? []) visit(dependency);
  };
  for (const name of requested) if (!name.includes("/") && !name.endsWith(".whl")) visit(name);
  return [...found].sort();
}

// The page's package list with the packages it names by URL (its own wheel) made absolute.
export function absolutePackages(packages, base) {
  return packages.map((name) => (name.includes("/") ? new URL(name, base).href : name));
}

// The packages the page names by URL, made absolute against `base`.
export function urlPackages(packages, base) {
  return absolutePackages(packages, base).filter((name) => name.includes("/"));
}

// {url: sha256} of each wheel given by URL, as fetched now (revalidated: served no-cache).
export async function wheelDigests(urls) {
  const digests = await Promise.all(urls.map(async (url) => [url, await sha256([await fetchBytes(url)])]));
  return Object.fromEntries(digests);
}

// --- a first visit's packages ------------------------------------------------------------------

// The wheels a normal boot installs: each locked package the list needs, then each it names by
// URL (the app's). [{name, url, integrity, channel}]: what Pyodide's loader would fetch, check
// and record. `indexUrl`: where the lock's files are.
export function wheelsToInstall(lock, packages, base, indexUrl = INDEX_URL) {
  const locked = lockedClosure(lock, packages).map((key) => {
    const entry = lock.packages[key];
    if (entry.install_dir !== "site") throw new Error(`${entry.name}: installed to ${entry.install_dir}`);
    const integrity = `sha256-${btoa(String.fromCharCode(...entry.sha256.match(/../g).map((h) => parseInt(h, 16))))}`;
    return { name: entry.name, url: new URL(entry.file_name, indexUrl).href, integrity, channel: "default channel" };
  });
  const byUrl = urlPackages(packages, base).map((url) => {
    const name = decodeURIComponent(url.slice(url.lastIndexOf("/") + 1)).split("-")[0].toLowerCase().replaceAll("_", "-");
    return { name, url, integrity: undefined, channel: url };
  });
  return [...locked, ...byUrl];
}

// The worker's download: the runtime's files first (the page's own downloads of them, joined
// through the HTTP cache), then each wheel, unpacked. [{name, channel, files: [[path in the wheel, bytes], …]}]
export async function downloadInOrder({ packages, base, runtime }) {
  const lock = fetch(INDEX_URL + "pyodide-lock.json").then((response) => response.json());
  await Promise.allSettled(runtime.map((url) => fetch(url).then((response) => response.arrayBuffer())));
  return Promise.all(
    wheelsToInstall(await lock, packages, base).map(async ({ name, url, integrity, channel }) => {
      const response = await fetch(url, integrity ? { integrity } : {});
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
      const zip = new Uint8Array(await response.arrayBuffer());
      const members = zipMembers(zip).filter((m) => !m.name.endsWith("/"));
      if (members.some((m) => /^[^/]+\.data\//.test(m.name))) throw new Error(`${url}: a wheel with .data`);
      const files = await Promise.all(members.map(async (m) => [m.name, await unzipMember(zip, m)]));
      return { name, channel, files };
    }),
  );
}

// Install what downloadInWorker unpacked, as Pyodide's loader would: the files into
// site-packages, each shared library loaded (in a fixed order), each package recorded.
export async function installUnpacked(py, wheels) {
  const sitePackages = py._api.sitepackages;
  const libs = [];
  for (const { files } of wheels) {
    for (const [name, bytes] of files) {
      const path = `${sitePackages}/${name}`;
      py.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
      py.FS.writeFile(path, bytes);
      if (name.endsWith(".so")) libs.push(path);
    }
  }
  py.runPython("import importlib\nimportlib.invalidate_caches()\n");
  for (const path of libs.sort()) await py._api.loadDynlib(path);
  for (const { name, channel } of wheels) py.loadedPackages[name] = channel;
}

// --- what a snapshot loads first ----------------------------------------------------------------

// The shared libraries of those packages, in a fixed order: [{path, bytes}].
export async function sharedLibraries(lock, requested, sitePackages) {
  const wheels = wheelsToInstall(lock, requested, INDEX_URL).filter(
    ({ url, channel }) => channel === "default channel" && !url.endsWith("-none-any.whl"),
  );
  const perWheel = await Promise.all(
    wheels.map(async ({ url }) => {
      const zip = await fetchBytes(url);
      const members = zipMembers(zip).filter((m) => m.name.endsWith(".so"));
      members.sort((a, b) => (a.name < b.name ? -1 : 1));
      return Promise.all(
        members.map(async (m) => ({ path: sitePackages + m.name, bytes: await unzipMember(zip, m) })),
      );
    }),
  );
  return perWheel.flat();
}
