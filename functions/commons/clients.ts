/**
 * The AWS SDK clients the ingest Lambda calls: DynamoDB (current state, status) and S3 (raw,
 * quarantine, spill). Nothing else: the Kinesis client and the emulator workarounds of local runs
 * live under `bin/local/clients.ts`. No client is created at module scope: the handler calls
 * `createRuntimeClients` at cold start, and tests pass their own (or mocked) clients.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';

/** The clients the ingest path uses. */
export interface RuntimeClients {
  readonly dynamodb: DynamoDBClient;
  readonly s3: S3Client;
}

/** Options of `createRuntimeClients`. */
export interface RuntimeClientOptions {
  /** SDK attempts per call, with the SDK's backoff (throttling, 5xx). @default the SDK's 3 */
  readonly maxAttempts?: number;
}

/**
 * Clients for the Lambda's own region and credentials (the SDK default chain). Endpoints follow the
 * SDK's `AWS_ENDPOINT_URL*` variables; when one is set for S3 (LocalStack), addressing is path-style.
 */
export function createRuntimeClients(options: RuntimeClientOptions = {}, env: NodeJS.ProcessEnv = process.env): RuntimeClients {
  const common = options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {};
  const customS3 = Boolean(env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL);
  return { dynamodb: lean(new DynamoDBClient(common)), s3: lean(new S3Client({ ...common, ...(customS3 ? { forcePathStyle: true } : {}) })) };
}

/**
 * Per-request work neither service needs, removed from a client's middleware stack: the SDK's
 * user-agent strings (its own telemetry; requests are valid without them) and the logger
 * middleware, which builds a sensitive-data-filtered copy of every input and output even for the
 * default no-op logger. The HTTP handler stays the SDK default (keep-alive, 50 sockets), which
 * measured no better or worse than a custom agent. `npm run bench` (goal 6) measures the saving.
 */
const LEAN_REMOVALS = ['getUserAgentMiddleware', 'loggerMiddleware'] as const;

export function lean<C extends { middlewareStack: { remove(name: string): boolean } }>(client: C): C {
  for (const name of LEAN_REMOVALS) client.middlewareStack.remove(name);
  return client;
}
