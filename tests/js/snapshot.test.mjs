// static/boot/snapshot.mjs under Node: reading a stored boot snapshot's body by its headers.
import assert from "node:assert/strict";
import { test } from "node:test";

import { readBody, snapshotHeapBytes } from "../../static/boot/snapshot.mjs";

// A snapshot of 12 bytes whose header is 8 (its second 32-bit word), one shared library, two
// installed files, then the index.
const bytes = (...values) => Uint8Array.from(values);
const SNAPSHOT = bytes(0, 0, 0, 0, 8, 0, 0, 0, 1, 2, 3, 4);
const LIB = bytes(9, 9, 9);
const FILES = [
  ["/lib/a.py", bytes(65)],
  ["/lib/b.py", bytes(66, 66)],
];
const INDEX = new TextEncoder().encode(
  JSON.stringify({ files: FILES.map(([path, b]) => [path, b.length]), loaded: { pydantic: "default channel" } }),
);

function stored({ chunks = [SNAPSHOT, LIB, ...FILES.map(([, b]) => b), INDEX], headers = {} } = {}) {
  const body = new Blob(chunks).stream();
  return new Response(body, {
    headers: {
      "x-riacho-snapshot-bytes": String(SNAPSHOT.length),
      "x-riacho-libs": JSON.stringify([["/lib/core.so", LIB.length]]),
      "x-riacho-files-bytes": "3",
      "x-riacho-index-bytes": String(INDEX.length),
      ...headers,
    },
  });
}

test("the heap's size is the snapshot less its header", () => {
  assert.equal(snapshotHeapBytes(SNAPSHOT), 4);
});

test("a body is split into the snapshot, its libraries, its files and what was loaded", async () => {
  const { snapshot, filled } = readBody(stored());
  const { libs, files, loaded } = await filled;
  assert.deepEqual(snapshot, SNAPSHOT);
  assert.deepEqual(libs, [{ path: "/lib/core.so", bytes: LIB }]);
  assert.deepEqual(files, FILES);
  assert.deepEqual(loaded, { pydantic: "default channel" });
});

test("a body read in many small chunks comes out the same", async () => {
  const all = new Uint8Array(await new Blob([SNAPSHOT, LIB, ...FILES.map(([, b]) => b), INDEX]).arrayBuffer());
  const chunks = Array.from(all, (byte) => bytes(byte));
  const { files } = await readBody(stored({ chunks })).filled;
  assert.deepEqual(files, FILES);
});

test("an entry without its layout is refused at once", () => {
  assert.throws(() => readBody(stored({ headers: { "x-riacho-libs": "{}" } })), /without its layout/);
  assert.throws(() => readBody(stored({ headers: { "x-riacho-snapshot-bytes": "4" } })), /without its layout/);
});

test("a body shorter or longer than its headers say is refused", async () => {
  await assert.rejects(readBody(stored({ chunks: [SNAPSHOT, LIB] })).filled, /expected/);
  await assert.rejects(readBody(stored({ chunks: [SNAPSHOT, LIB, ...FILES.map(([, b]) => b), INDEX, bytes(0)] })).filled, /over/);
});

test("an index that does not match the files' size is refused", async () => {
  const response = stored({ headers: { "x-riacho-files-bytes": "2" }, chunks: [SNAPSHOT, LIB, bytes(65, 66), INDEX] });
  await assert.rejects(readBody(response).filled, /index does not match/);
});
