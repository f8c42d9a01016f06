/**
 * Replaces the AWS SDK's CRC64-NVME and CRC32C, both in pure JavaScript, in Lambda bundles only (see
 * `BUNDLE_REPLACEMENTS` in handler-asset.ts). S3's flexible checksums use one only when a request
 * asks for that algorithm (`ChecksumAlgorithm`), or to validate a response checksum of that type,
 * which the SDK does only for a GetObject sent with `ChecksumMode`. The runtime's S3 client computes
 * and validates checksums only where S3 requires them (functions/commons/clients.ts
 * `S3_CHECKSUMS`), with CRC32 (node:zlib) by default, and no function sets either field; the bundle
 * test checks that. About 1.5 KB; constructing one fails loudly instead of hashing wrong.
 */
const unavailable = (algorithm: string): Error =>
  new Error(`the Lambda bundle carries no ${algorithm}: the runtime never asks S3 for that checksum algorithm`);

export class Crc64NvmeJs {
  constructor() {
    throw unavailable('CRC64-NVME');
  }
}

export class Crc32cJs {
  constructor() {
    throw unavailable('CRC32C');
  }
}
