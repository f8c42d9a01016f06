/**
 * Replaces the pure-JavaScript SHA-256, SHA-1, MD5 and CRC32 of the AWS SDK in Lambda bundles only
 * (see `BUNDLE_REPLACEMENTS` in handler-asset.ts). The SDK's node hashes (`Sha256Node`, `Sha1Node`,
 * `Md5Node`) use `node:crypto` and fall back to these only when `createHash` refuses the algorithm
 * at load time, which Node on Lambda never does (no FIPS mode); `Crc32Node` uses `zlib.crc32`
 * (Node 20.15 and 22.2 on) and falls back only when it is missing. The fallbacks would otherwise
 * ship about 8 KB that never runs. Constructing one fails loudly instead of hashing wrong.
 */

const unavailable = (algorithm: string): Error =>
  new Error(`the Lambda bundle carries no JavaScript ${algorithm}: node:crypto refused ${algorithm.toLowerCase()}, which Node on Lambda never does`);

export class Sha256Js {
  constructor() {
    throw unavailable('SHA-256');
  }
}

export class Sha1Js {
  constructor() {
    throw unavailable('SHA-1');
  }
}

export class Md5Js {
  constructor() {
    throw unavailable('MD5');
  }
}

export class Crc32Js {
  constructor() {
    throw new Error('the Lambda bundle carries no JavaScript CRC32: node:zlib has no crc32, which Node 22 on Lambda always has');
  }
}
