// static/boot/zip.mjs under Node: the wheels' zip reader (run by `make test`: node --test tests/js).
import assert from "node:assert/strict";
import { test } from "node:test";

import { unzipMember, zipMembers } from "../../static/boot/zip.mjs";

// Made by Python's zipfile: a folder, a stored file, a deflated file with an extra field in its
// headers, a deflated file with a non-ASCII name, and an archive comment.
const ARCHIVE = Buffer.from(
  "UEsDBBQAAAAAAAAAIQAAAAAAAAAAAAAAAAAEAAAAcGtnL1BLAwQUAAAAAAB6jYNdZKRmEwoAAAAKAAAADwAAAHBrZy9fX2luaXRfXy5weVZBTFVFID0gMQpQSwMEFAAAAAgAAAAhAGxZd3ANAAAAGAEAAAwABABwa2cvZGF0YS50eHT+ygAAK8pMTM7IVygapVApAFBLAwQUAAAICAB6jYNdC8kGwQUAAAADAAAADgAAAHBrZy9hw6fDo28udHh0K8rMBwBQSwECFAMUAAAAAAAAACEAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAgAEAAAAAcGtnL1BLAQIUAxQAAAAAAHqNg11kpGYTCgAAAAoAAAAPAAAAAAAAAAAAAACAASIAAABwa2cvX19pbml0X18ucHlQSwECFAMUAAAACAAAACEAbFl3cA0AAAAYAQAADAAEAAAAAAAAAAAAgAFZAAAAcGtnL2RhdGEudHh0/soAAFBLAQIUAxQAAAgIAHqNg10LyQbBBQAAAAMAAAAOAAAAAAAAAAAAAACAAZQAAABwa2cvYcOnw6NvLnR4dFBLBQYAAAAABAAEAOkAAADFAAAACQBhIGNvbW1lbnQ=",
  "base64",
);

const text = (bytes) => new TextDecoder().decode(bytes);

test("lists every member with its method and sizes, past an archive comment", () => {
  const members = zipMembers(new Uint8Array(ARCHIVE));
  assert.deepEqual(
    members.map(({ name, method, size }) => [name, method, size]),
    [
      ["pkg/", 0, 0],
      ["pkg/__init__.py", 0, 10],
      ["pkg/data.txt", 8, 280],
      ["pkg/ação.txt", 8, 3],
    ],
  );
});

test("reads a stored member, a deflated one past its extra field, and a UTF-8 name", async () => {
  const zip = new Uint8Array(ARCHIVE);
  const byName = Object.fromEntries(zipMembers(zip).map((m) => [m.name, m]));
  assert.equal(text(await unzipMember(zip, byName["pkg/__init__.py"])), "VALUE = 1\n");
  assert.equal(text(await unzipMember(zip, byName["pkg/data.txt"])), "riacho ".repeat(40));
  assert.equal(text(await unzipMember(zip, byName["pkg/ação.txt"])), "rio");
});

test("reads an archive that sits inside a larger buffer", async () => {
  const padded = new Uint8Array(ARCHIVE.length + 16);
  padded.set(ARCHIVE, 8);
  const zip = padded.subarray(8, 8 + ARCHIVE.length);
  const member = zipMembers(zip).find((m) => m.name === "pkg/data.txt");
  assert.equal(text(await unzipMember(zip, member)), "riacho ".repeat(40));
});

test("refuses what is not a zip archive", () => {
  assert.throws(() => zipMembers(new TextEncoder().encode("not a zip at all, just words")), /not a zip archive/);
});

test("refuses a damaged central directory", () => {
  const zip = new Uint8Array(ARCHIVE);
  const directory = new DataView(zip.buffer).getUint32(zip.length - 22 - 9 + 16, true);
  zip[directory] ^= 0xff;
  assert.throws(() => zipMembers(zip), /bad zip directory/);
});

test("refuses a compression method it cannot read, and a member of the wrong size", async () => {
  const zip = new Uint8Array(ARCHIVE);
  const member = zipMembers(zip).find((m) => m.name === "pkg/data.txt");
  await assert.rejects(unzipMember(zip, { ...member, method: 12 }), /zip method 12/);
  await assert.rejects(unzipMember(zip, { ...member, size: 7 }), /280 bytes/);
});
