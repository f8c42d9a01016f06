/**
 * CRC32C (Castagnoli, the checksum of iSCSI and of Aurora DSQL's split CDC records), because Node's
 * zlib only has the other CRC-32. Aurora DSQL puts it, as a decimal string, on the main record of a
 * split image, computed over the reassembled image text; aurora-dsql-fragments.ts checks it.
 *
 * Example: `crc32c(new TextEncoder().encode("123456789"))` → 0xe3069283 (3808858755), the standard
 * check value (RFC 3720, B.4).
 */

/** The reflected Castagnoli polynomial. */
const POLYNOMIAL = 0x82f63b78;

const TABLE: Uint32Array = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLYNOMIAL : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** The CRC32C of `bytes`, as an unsigned 32-bit integer. */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) crc = (TABLE[(crc ^ (bytes[i] ?? 0)) & 0xff] ?? 0) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
