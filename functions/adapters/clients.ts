/**
 * The AWS SDK clients the Lambda functions call: DynamoDB (current state, status) and S3 (raw,
 * quarantine, spill). Nothing else: the Kinesis client and the emulator workarounds of local runs
 * live under `bin/local/clients.ts`. No client is created at module scope: a handler calls
 * `createRuntimeClients` at cold start, and tests pass their own (or mocked) clients.
 *
 * Only documented client options are used, so every middleware the SDK, Powertools or a user adds
 * runs on every request, and an SDK upgrade changes nothing here:
 * - `maxAttempts`: the standard retry strategy with backoff (throttling, 5xx);
 * - `cacheMiddleware` (DynamoDB): the SDK resolves a command's middleware stack once per command
 *   class instead of on every `send`;
 * - `WHEN_REQUIRED` checksums (S3), see {@link S3_CHECKSUMS};
 * - the SDK's default node HTTP handler, which keeps connections alive.
 *
 *   const { dynamodb, s3 } = createRuntimeClients({ maxAttempts: 7 });
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';

/** The clients the Lambda functions use. */
export interface RuntimeClients {
  readonly dynamodb: DynamoDBClient;
  readonly s3: S3Client;
}

/** Options of `createRuntimeClients`. */
export interface RuntimeClientOptions {
  /** SDK attempts per call, with the SDK's backoff (throttling, 5xx). @default the SDK's (DynamoDB 4, S3 3) */
  readonly maxAttempts?: number;
}

/**
 * S3 checksums only where the operation requires one (`WHEN_REQUIRED`, a documented client option).
 * By default the SDK computes a CRC32 of every PutObject body (a full pass over the gzip batch) and
 * validates one on every GetObject. S3 requires neither for the operations tidemark calls (its
 * buckets have no Object Lock, which would make PutObject require one): a request stays signed with
 * the SHA-256 of its payload (SigV4 `x-amz-content-sha256`), which S3 verifies; responses come over
 * TLS; raw, spill and quarantine objects are gzip, whose CRC-32 trailer zlib checks on every read,
 * and the JSON state objects of the jobs fail to parse when damaged. Operations for which S3
 * requires a checksum (DeleteObjects, for one) still send it.
 */
export const S3_CHECKSUMS = { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' } as const;

/** DynamoDB client options beyond the defaults: the middleware stack resolved once per command class. */
export const DYNAMODB_OPTIONS = { cacheMiddleware: true } as const;

/**
 * Clients for the function's own region and credentials (the SDK default chain). Endpoints follow
 * the SDK's `AWS_ENDPOINT_URL*` variables; when one is set for S3 (LocalStack), addressing is
 * path-style.
 */
export function createRuntimeClients(options: RuntimeClientOptions = {}, env: NodeJS.ProcessEnv = process.env): RuntimeClients {
  const common = options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {};
  const customS3 = Boolean(env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL);
  return {
    dynamodb: new DynamoDBClient({ ...common, ...DYNAMODB_OPTIONS }),
    s3: new S3Client({ ...common, ...S3_CHECKSUMS, ...(customS3 ? { forcePathStyle: true } : {}) }),
  };
}
