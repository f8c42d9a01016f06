/**
 * AWS SDK clients for the CLI, local runs and tests: DynamoDB, S3 and Kinesis, against real AWS or
 * local emulators (DynamoDB Local, kinesalite, s3rver, LocalStack). The emulator workarounds live
 * here, not in the Lambda runtime (`functions/adapters/clients.ts`).
 */
import { Agent as HttpAgent } from 'node:http';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { DYNAMODB_OPTIONS, type RuntimeClients, S3_CHECKSUMS } from '../../functions/adapters/clients.js';
import { annotateErrors } from './call-context.js';

/** Where the three services answer, with the credentials and region to use there. */
export interface Endpoints {
  dynamodb: string;
  kinesis: string;
  s3: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/** The runtime's clients plus Kinesis, which only local tooling (poller, tests, provision) calls. */
export interface Clients extends RuntimeClients {
  readonly kinesis: KinesisClient;
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
 * are given, otherwise the SDK default chain applies. Emulator workarounds:
 * - kinesalite: against an `http://` Kinesis endpoint the HTTP/1.1 handler is used (the SDK's
 *   default HTTP/2 handler fails on plain http);
 * - s3rver: with a custom S3 endpoint, path-style addressing is forced, and checksums are only
 *   computed and validated when the operation requires them (s3rver stores the aws-chunked framing
 *   of streamed bodies otherwise).
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
  const dynamodb = annotateErrors(new DynamoDBClient({ ...common, ...DYNAMODB_OPTIONS, ...(dynamodbEndpoint !== undefined ? { endpoint: dynamodbEndpoint } : {}) }), 'DynamoDB', dynamodbEndpoint);

  const kinesisEndpoint = endpointOf('kinesis');
  const kinesis = annotateErrors(
    new KinesisClient({
      ...common,
      ...(kinesisEndpoint !== undefined ? { endpoint: kinesisEndpoint } : {}),
      ...(kinesisEndpoint?.startsWith('http://')
        ? { requestHandler: new NodeHttpHandler({ httpAgent: new HttpAgent({ keepAlive: true, maxSockets: 64 }) }) }
        : {}),
    }),
    'Kinesis',
    kinesisEndpoint,
  );

  const s3Endpoint = endpointOf('s3');
  const s3 = annotateErrors(new S3Client({ ...common, ...S3_CHECKSUMS, ...(s3Endpoint !== undefined ? { endpoint: s3Endpoint, forcePathStyle: true } : {}) }), 'S3', s3Endpoint);

  return { dynamodb, kinesis, s3 };
}

/** Releases the sockets of all three clients. */
export function destroyClients(clients: Clients): void {
  clients.dynamodb.destroy();
  clients.kinesis.destroy();
  clients.s3.destroy();
}
