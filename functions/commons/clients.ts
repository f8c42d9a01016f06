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
  return { dynamodb: new DynamoDBClient(common), s3: new S3Client({ ...common, ...(customS3 ? { forcePathStyle: true } : {}) }) };
}
