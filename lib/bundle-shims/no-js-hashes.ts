/**
 * Replaces the pure-JavaScript SHA-256, SHA-1 and MD5 of the AWS SDK in Lambda bundles only (see
 * `BUNDLE_REPLACEMENTS` in handler-asset.ts). The SDK's node hashes (`Sha256Node`, `Sha1Node`,
 * `Md5Node`) use `node:crypto` and fall back to these only when `createHash` refuses the algorithm
 * at load time, which Node on Lambda never does (no FIPS mode); the fallback would otherwise ship
 * about 7.5 KB that never runs. Constructing one fails loudly instead of hashing wrong.
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
