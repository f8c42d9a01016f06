/**
 * AWS SDK clients for DynamoDB, Kinesis and S3, configured once for both real AWS and local
 * emulators (DynamoDB Local, kinesalite, s3rver, LocalStack). No client is created at module
 * scope: callers (Lambda handlers at cold start, the CLI, tests) call `createClients` themselves.
 */
import { Agent as HttpAgent } from 'node:http';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';

/** Where the three services answer, with the credentials and region to use there. */
export interface Endpoints {
  dynamodb: string;
  kinesis: string;
  s3: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** The three clients returned by `createClients`. */
export interface Clients {
  dynamodb: DynamoDBClient;
  kinesis: KinesisClient;
  s3: S3Client;
}

/** Options of `createClients`. */
export interface ClientOptions {
  /** SDK retry attempts per call (the SDK default is 3). */
  maxAttempts?: number;
}

const ENV_ENDPOINT = {
  dynamodb: 'AWS_ENDPOINT_URL_DYNAMODB',
  kinesis: 'AWS_ENDPOINT_URL_KINESIS',
  s3: 'AWS_ENDPOINT_URL_S3',
} as const;

const nonEmpty = (value: string | undefined): string | undefined => (value === undefined || value === '' ? undefined : value);

/**
 * Creates the DynamoDB, Kinesis and S3 clients.
 *
 * Endpoints come from `endpoints`, else from `AWS_ENDPOINT_URL_DYNAMODB` / `_KINESIS` / `_S3`
 * (then `AWS_ENDPOINT_URL`), else the SDK's regional default. Credentials are used when both keys
 * are given, otherwise the SDK default chain applies. Against an `http://` Kinesis endpoint the
 * HTTP/1.1 handler is used (the SDK's default HTTP/2 handler fails on plain http). With a custom S3
 * endpoint, path-style addressing is forced. S3 checksums are only computed and validated when the
 * operation requires them (s3rver stores aws-chunked framing of streamed bodies otherwise).
 */
export function createClients(endpoints: Partial<Endpoints> & { region?: string } = {}, options: ClientOptions = {}): Clients {
  const env = process.env;
  const endpointOf = (service: keyof typeof ENV_ENDPOINT): string | undefined =>
    nonEmpty(endpoints[service]) ?? nonEmpty(env[ENV_ENDPOINT[service]]) ?? nonEmpty(env.AWS_ENDPOINT_URL);
  const region = nonEmpty(endpoints.region);
  const credentials =
    endpoints.accessKeyId !== undefined && endpoints.secretAccessKey !== undefined
      ? { accessKeyId: endpoints.accessKeyId, secretAccessKey: endpoints.secretAccessKey }
      : undefined;
  const common = {
    ...(region !== undefined ? { region } : {}),
    ...(credentials !== undefined ? { credentials } : {}),
    ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
  };

  const dynamodbEndpoint = endpointOf('dynamodb');
  const dynamodb = lean(new DynamoDBClient({ ...common, ...(dynamodbEndpoint !== undefined ? { endpoint: dynamodbEndpoint } : {}) }));

  const kinesisEndpoint = endpointOf('kinesis');
  const kinesis = new KinesisClient({
    ...common,
    ...(kinesisEndpoint !== undefined ? { endpoint: kinesisEndpoint } : {}),
    ...(kinesisEndpoint?.startsWith('http://')
      ? { requestHandler: new NodeHttpHandler({ httpAgent: new HttpAgent({ keepAlive: true, maxSockets: 64 }) }) }
      : {}),
  });

  const s3Endpoint = endpointOf('s3');
  const s3 = lean(
    new S3Client({
      ...common,
      ...(s3Endpoint !== undefined ? { endpoint: s3Endpoint, forcePathStyle: true } : {}),
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    }),
  );

  return { dynamodb, kinesis, s3 };
}

/** Releases the sockets of all three clients. */
export function destroyClients(clients: Clients): void {
  clients.dynamodb.destroy();
  clients.kinesis.destroy();
  clients.s3.destroy();
}

/**
 * Per-request work neither service needs, removed from a client's middleware stack: the SDK's
 * user-agent strings (its own telemetry; requests are valid without them) and the logger
 * middleware, which builds a sensitive-data-filtered copy of every input and output even for the
 * default no-op logger. The HTTP handler stays the SDK default (keep-alive, 50 sockets), which
 * measured no better or worse than a custom agent. `npm run bench` (goal 6) measures the saving.
 */
const LEAN_REMOVALS = ['getUserAgentMiddleware', 'loggerMiddleware'] as const;

function lean<C extends { middlewareStack: { remove(name: string): boolean } }>(client: C): C {
  for (const name of LEAN_REMOVALS) client.middlewareStack.remove(name);
  return client;
}
