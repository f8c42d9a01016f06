/**
 * Replaces the S3 client's multi-region signer in Lambda bundles only (see `BUNDLE_REPLACEMENTS`
 * in handler-asset.ts). The original signs with SigV4 unless a request goes to a multi-region
 * access point (signing region `*`), which needs SigV4a from the CRT or the JavaScript SigV4a
 * package; the bundle carries neither, so the original fails there too, with a longer message.
 * Tidemark's functions address their raw bucket by name, never through a multi-region access
 * point. About 3 KB of the bundle.
 */
import { SignatureV4 } from '@smithy/signature-v4';

type SignOptions = { signingRegion?: string };

const refuse = (): never => {
  throw new Error('the Lambda bundle carries no SigV4a signer: tidemark addresses its bucket by name, never through a multi-region access point');
};

export class SignatureV4MultiRegion extends SignatureV4 {
  override async sign(request: never, options: SignOptions = {}): Promise<never> {
    if (options.signingRegion === '*') refuse();
    return super.sign(request, options as never) as Promise<never>;
  }

  override async presign(request: never, options: SignOptions = {}): Promise<never> {
    if (options.signingRegion === '*') refuse();
    return super.presign(request, options as never) as Promise<never>;
  }
}
