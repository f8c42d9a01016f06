/**
 * Replaces the S3 Express One Zone session provider in Lambda bundles only (see
 * `BUNDLE_REPLACEMENTS` in handler-asset.ts). The S3 client builds one at construction, and asks it
 * for session credentials only for a directory bucket (a name ending in `--x-s3`, which the endpoint
 * rules route to the S3Express backend). Tidemark's functions address the raw bucket alone, a
 * general purpose bucket the construct creates, whose name the config refuses with that suffix
 * (`bucketNameProblems` in functions/commons/config.ts). About 2 KB with its cache; asking it for a
 * session fails loudly.
 */
export class S3ExpressIdentityProviderImpl {
  constructor(readonly createSessionFn: unknown) {}

  async getS3ExpressIdentity(): Promise<never> {
    throw new Error('the Lambda bundle carries no S3 Express session provider: tidemark uses general purpose buckets, never directory buckets');
  }
}
