// Zip archives (wheels), read in the browser: the members of the central directory, and each
// member's bytes (stored or deflated). Pure: no page, no worker, no network
// (tests/js/zip.test.mjs runs it under Node).

// The members of a zip archive: name, method, sizes and where the data starts.
export function zipMembers(zip) {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  let eocd = zip.length - 22;
  while (eocd >= 0 && view.getUint32(eocd, true) !== 0x06054b50) eocd--;
  if (eocd < 0) throw new Error("not a zip archive");
  const count = view.getUint16(eocd + 10, true);
  let at = view.getUint32(eocd + 16, true);
  const decoder = new TextDecoder();
  const members = [];
  for (let i = 0; i < count; i++) {
    if (view.getUint32(at, true) !== 0x02014b50) throw new Error("bad zip directory");
    const nameLength = view.getUint16(at + 28, true);
    const local = view.getUint32(at + 42, true);
    members.push({
      name: decoder.decode(zip.subarray(at + 46, at + 46 + nameLength)),
      method: view.getUint16(at + 10, true),
      packed: view.getUint32(at + 20, true),
      size: view.getUint32(at + 24, true),
      start: local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true),
    });
    at += 46 + nameLength + view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
  }
  return members;
}

// One member's bytes (stored or deflated).
export async function unzipMember(zip, member) {
  const data = zip.subarray(member.start, member.start + member.packed);
  if (member.method === 0) return data;
  if (member.method !== 8) throw new Error(`${member.name}: zip method ${member.method}`);
  const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
  const out = new Uint8Array(await new Response(stream).arrayBuffer());
  if (out.length !== member.size) throw new Error(`${member.name}: ${out.length} bytes`);
  return out;
}
