/**
 * Replaces the pure-JavaScript CRC64-NVME of the AWS SDK in Lambda bundles only (see
 * `BUNDLE_REPLACEMENTS` in handler-asset.ts). S3's flexible checksums use it only when a request
 * asks for that algorithm (`ChecksumAlgorithm: 'CRC64NVME'`), or when validating a response
 * checksum of that type, which the SDK does only for a GetObject sent with `ChecksumMode`. The
 * runtime's S3 client computes and validates checksums only where S3 requires them
 * (functions/commons/clients.ts `S3_CHECKSUMS`), with CRC32 by default, and no function sets
 * either field. About 1.1 KB; constructing one fails loudly instead of hashing wrong.
 */
export class Crc64NvmeJs {
  constructor() {
    throw new Error('the Lambda bundle carries no CRC64-NVME: the runtime never asks S3 for that checksum algorithm');
  }
}
