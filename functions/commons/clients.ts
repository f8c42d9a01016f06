/**
 * The AWS SDK clients the ingest Lambda calls: DynamoDB (current state, status) and S3 (raw,
 * quarantine, spill). Nothing else: the Kinesis client and the emulator workarounds of local runs
 * live under `bin/local/clients.ts`. No client is created at module scope: the handler calls
 * `createRuntimeClients` at cold start, and tests pass their own (or mocked) clients.
 *
 * Both clients are trimmed by `lean` (the per-request work the SDK does that neither service needs);
 * `npm run bench` (goal 6) measures each step against the default client, and docs/performance.md
 * gives the profile.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { directPath } from './dynamodb-direct.js';

/** The clients the ingest path uses. */
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
 * S3 checksums only where the operation requires one (`WHEN_REQUIRED`). By default the SDK computes
 * a CRC32 of every PutObject body (a full pass over the gzip batch) and validates one on every
 * GetObject. S3 requires neither for the operations tidemark calls (its buckets have no Object
 * Lock, which would make PutObject require one): a request stays signed with the SHA-256 of its
 * payload (SigV4 `x-amz-content-sha256`), which S3 verifies; responses come over TLS; raw, spill and
 * quarantine objects are gzip, whose CRC-32 trailer zlib checks on every read, and the JSON state
 * objects of the jobs fail to parse when damaged. Operations for which S3 requires a checksum
 * (DeleteObjects, for one) still send it.
 */
export const S3_CHECKSUMS = { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' } as const;

/**
 * Clients for the Lambda's own region and credentials (the SDK default chain). Endpoints follow the
 * SDK's `AWS_ENDPOINT_URL*` variables; when one is set for S3 (LocalStack), addressing is path-style.
 */
export function createRuntimeClients(options: RuntimeClientOptions = {}, env: NodeJS.ProcessEnv = process.env): RuntimeClients {
  const common = options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {};
  const customS3 = Boolean(env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL);
  return {
    dynamodb: lean(new DynamoDBClient(common)),
    s3: lean(new S3Client({ ...common, ...S3_CHECKSUMS, ...(customS3 ? { forcePathStyle: true } : {}) })),
  };
}

/**
 * Middleware removed from both clients' stacks:
 * - `getUserAgentMiddleware`: builds the SDK's telemetry `user-agent` / `x-amz-user-agent` strings
 *   on every request; both services accept requests without them (the HTTP layer's own
 *   `user-agent` is not signed either way).
 * - `loggerMiddleware`: builds a sensitive-data-filtered copy of every input and output even for the
 *   default no-op logger; tidemark logs through Powertools, never through the SDK logger.
 */
export const LEAN_REMOVALS = ['getUserAgentMiddleware', 'loggerMiddleware'] as const;

/**
 * Removed from the DynamoDB client only: `recursionDetectionMiddleware`, which in a Lambda copies
 * the invocation's X-Ray trace id into an `X-Amzn-Trace-Id` header (an async lookup per request).
 * DynamoDB does not read that header: it records no trace segment and starts no downstream
 * invocation from a write (Lambda's recursive-loop detection covers SQS, SNS and S3, not DynamoDB).
 * The S3 client keeps it: S3 forwards the trace context to event notifications.
 */
export const DYNAMODB_REMOVALS = ['recursionDetectionMiddleware'] as const;

/** The SDK's signer option: returns the SigV4 signer for a request's auth scheme. */
type SignerProvider = (authScheme?: unknown) => Promise<unknown>;

/** Options of `lean`. */
export interface LeanOptions {
  /**
   * DynamoDB: send PutItem, UpdateItem, GetItem and BatchGetItem on the direct path
   * (`dynamodb-direct.ts`). Off only to measure the difference.
   * @default true
   */
  readonly direct?: boolean;
}

interface Tunable {
  middlewareStack: { remove(name: string): boolean };
  config: object;
}

/**
 * Trims a DynamoDB or S3 client (built by `createRuntimeClients` or by the local `createClients`):
 *
 * Both: the `LEAN_REMOVALS` middleware.
 *
 * DynamoDB also:
 * - `DYNAMODB_REMOVALS`;
 * - `cacheMiddleware`: the SDK resolves the middleware stack (sort, alias map, handler chain) once
 *   per command class instead of on every `send`. The resolved chain shares one handler context
 *   between the requests of a command class, which is sound here because every value the SDK puts
 *   in it is the same for every DynamoDB request of this client: one region, one set of
 *   credentials, and one endpoint (tidemark names tables, it never addresses them by ARN, so the
 *   table name, an endpoint parameter, does not change the endpoint). The S3 client does not get
 *   it: there the endpoint depends on the bucket (virtual-hosted addressing) and concurrent requests
 *   to two buckets could read each other's endpoint.
 * - one SigV4 signer for the client: by default the SDK builds a new `SignatureV4` (copying the
 *   whole client configuration) for every request. The first request builds it as the SDK would;
 *   later ones reuse it. Every request is still signed afresh, with the signing region and service
 *   passed per request and the credentials read from the client's (refreshing) provider.
 *
 * - the direct path (`directPath`): the ingest's per-record requests (PutItem, UpdateItem, GetItem,
 *   BatchGetItem) skip the middleware stack, the per-request endpoint rules and the schema serde,
 *   and keep the SDK's retry middleware, signer, HTTP handler and error deserialization.
 *
 * Unchanged, on purpose: SigV4 signing, the standard retry strategy with backoff (throttling needs
 * it; the adaptive one costs more per request), the SDK's keep-alive HTTP handler (a custom agent
 * measured the same, the fetch handler about twice the CPU), serialization and the host and
 * content-length headers that signing covers.
 */
export function lean<C extends Tunable>(client: C, options: LeanOptions = {}): C {
  for (const name of LEAN_REMOVALS) client.middlewareStack.remove(name);
  if (client instanceof DynamoDBClient) {
    for (const name of DYNAMODB_REMOVALS) client.middlewareStack.remove(name);
    const config = client.config as { cacheMiddleware?: boolean; signer: SignerProvider };
    config.cacheMiddleware = true;
    config.signer = reuseSigner(config.signer);
    if (options.direct !== false) directPath(client);
  }
  return client;
}

/** The first signer `make` returns, for every later request too (a failure is not kept). */
function reuseSigner(make: SignerProvider): SignerProvider {
  let signer: Promise<unknown> | undefined;
  return (authScheme) => {
    signer ??= make(authScheme).catch((err: unknown) => {
      signer = undefined;
      throw err;
    });
    return signer;
  };
}
