/**
 * Node CPU per DynamoDB write: the default SDK client against each documented client option
 * measured and against tidemark's runtime client (`createRuntimeClients`: the same client with
 * `cacheMiddleware`), all sending the same guarded PutItem to a stub HTTP server on
 * 127.0.0.1 (a child process, so its CPU is not counted) that answers a POST with `{}` like
 * DynamoDB does for a successful write, and a PUT with an ETag like S3 does for PutObject.
 * A CPU profile of each client shows where the time goes, by phase of the request path.
 */
import { spawn } from 'node:child_process';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { Session } from 'node:inspector/promises';
import { DynamoDBClient, type DynamoDBClientConfig, PutItemCommand, type PutItemCommandInput } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { DYNAMODB_OPTIONS, S3_CHECKSUMS } from '../../functions/adapters/clients.js';
import { mapLimit } from '../../functions/core/concurrency.js';
import { median } from './cpu.js';

const STUB = `
const http = require('node:http');
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.method === 'PUT') {
      res.writeHead(200, { etag: '"stub"', 'x-amz-request-id': 'stub' });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'stub', 'x-amz-crc32': '2745614147' });
    res.end('{}');
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.stdin.on('end', () => server.close(() => process.exit(0)));
process.stdin.resume();
`;

/** A stub DynamoDB endpoint in a child process; `close` ends it. */
export async function startStub(): Promise<{ endpoint: string; close: () => Promise<void> }> {
  const child = spawn(process.execPath, ['-e', STUB], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(String(chunk).trim())));
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.stdin.end();
      }),
  };
}

/** The guarded write tidemark sends for a bench row (about 300 bytes of attributes). */
export function sampleWrite(i: number): PutItemCommandInput {
  return {
    TableName: 'bench-orders',
    Item: {
      order_id: { N: String(i) },
      customer_id: { N: '19005' },
      status: { S: 'shipped' },
      amount_minor: { N: '408642' },
      currency: { S: 'GBP' },
      note: { S: 'yrraof7riyu1ily8f92nud2uswqlmydcwc1a5ke02 6yada63 tm5nih4kx3dm85ajckpjj737mst4mz9y qqd36yed6s6huy7 00qtsqgmrdfimvijpg5ha8umgt1znb55udn1xxg0i7lmgik' },
      updated_at: { N: '1735732800002' },
      __pos: { S: `a833228152.a8${String(33228152 + i).padStart(8, '0')}` },
      __op: { S: 'u' },
      __at: { N: '1735732801000' },
      __hash: { S: 'q1W3lq0m8E2QmXyL0aZb9A' },
      __deleted: { BOOL: false },
    },
    ConditionExpression: 'attribute_not_exists(#pk) OR #pos < :base',
    ExpressionAttributeNames: { '#pk': 'order_id', '#pos': '__pos' },
    ExpressionAttributeValues: { ':base': { S: 'a833228152' } },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    ReturnConsumedCapacity: 'TOTAL',
  };
}

/** A client under test: `send(i)` makes request `i` (a guarded PutItem, or an S3 PutObject). */
export interface ClientVariant {
  readonly name: string;
  /** Why it is (or is not) part of tidemark's clients. */
  readonly note?: string;
  readonly make: (endpoint: string) => { send: (i: number) => Promise<unknown>; close: () => void };
}

const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
const where = (endpoint: string) => ({ endpoint, region: 'us-east-1', credentials });

/** A DynamoDB variant: the client `build` makes, sending the bench's guarded PutItem. */
function dynamodbVariant(name: string, build: (endpoint: string) => DynamoDBClient, note?: string): ClientVariant {
  return {
    name,
    ...(note !== undefined ? { note } : {}),
    make: (endpoint) => {
      const client = build(endpoint);
      return { send: (i) => client.send(new PutItemCommand(sampleWrite(i))), close: () => client.destroy() };
    },
  };
}

/** The SDK client as constructed with no options beyond where and who. */
export const defaultVariant = dynamodbVariant('default SDK client', (endpoint) => new DynamoDBClient(where(endpoint)));

/** The DynamoDB client tidemark's Lambda uses: `createRuntimeClients` builds exactly this, with the Lambda's region and credentials. */
export const tidemarkVariant = dynamodbVariant('tidemark: default + cacheMiddleware', (endpoint) => new DynamoDBClient({ ...where(endpoint), ...DYNAMODB_OPTIONS }));

/** Every documented option measured, each against the default client, one change at a time. */
export const dynamodbVariants: readonly ClientVariant[] = [
  dynamodbVariant(
    'HTTP: own keep-alive agent, 64 sockets',
    (endpoint) =>
      new DynamoDBClient({
        ...where(endpoint),
        requestHandler: new NodeHttpHandler({ httpAgent: new HttpAgent({ keepAlive: true, maxSockets: 64 }), httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 64 }) }),
      }),
    'not applied: the default handler already reuses connections (keep-alive, 50 sockets)',
  ),
  dynamodbVariant('retry: adaptive strategy', (endpoint) => new DynamoDBClient({ ...where(endpoint), retryMode: 'adaptive' }), 'not applied: costlier (standard kept)'),
  dynamodbVariant('retry: maxAttempts 1', (endpoint) => new DynamoDBClient({ ...where(endpoint), maxAttempts: 1 }), 'not applied: throttling needs retries'),
  dynamodbVariant(
    'checksums: WHEN_REQUIRED',
    (endpoint) => new DynamoDBClient({ ...where(endpoint), requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' } as DynamoDBClientConfig),
    'no checksum middleware on DynamoDB (S3 gets it)',
  ),
  tidemarkVariant,
];

/** The S3 PutObject the ingest Lambda sends per batch: a gzip raw object (here 64 KiB of incompressible bytes). */
const rawBody = Buffer.from(Array.from({ length: 64 * 1024 }, (_, i) => (i * 2654435761) >>> 24));

function s3Variant(name: string, build: (endpoint: string) => S3Client, note?: string): ClientVariant {
  return {
    name,
    ...(note !== undefined ? { note } : {}),
    make: (endpoint) => {
      const client = build(endpoint);
      return {
        send: (i) => client.send(new PutObjectCommand({ Bucket: 'bench-raw', Key: `raw/2025/01/01/00/batch-${i}.jsonl.gz`, Body: rawBody, ContentType: 'application/x-ndjson', ContentEncoding: 'gzip' })),
        close: () => client.destroy(),
      };
    },
  };
}

const s3Where = (endpoint: string) => ({ ...where(endpoint), forcePathStyle: true });

/** S3 PutObject of a 64 KiB raw batch: the default client, the checksum setting alone, and tidemark's S3 client. */
export const s3Variants: readonly ClientVariant[] = [
  s3Variant('S3 default SDK client', (endpoint) => new S3Client(s3Where(endpoint))),
  s3Variant('S3 checksums WHEN_REQUIRED', (endpoint) => new S3Client({ ...s3Where(endpoint), ...S3_CHECKSUMS }), 'applied'),
];

export interface WriteCost {
  readonly name: string;
  /** Node CPU (user + system) per request, µs. */
  readonly cpuMicros: number;
  readonly wallMicros: number;
}

async function run(send: (i: number) => Promise<unknown>, writes: number, concurrency: number): Promise<void> {
  const ids = Array.from({ length: writes }, (_, i) => i);
  await mapLimit(ids, concurrency, async (i) => {
    await send(i);
  });
}

/**
 * CPU per request for each variant: `rounds` rounds of `writes` requests each, sent in chunks of
 * 100 that alternate between the variants (in a rotating order), so load changes and garbage
 * collections spread over all of them; median round.
 */
export async function measureClients(endpoint: string, variants: readonly ClientVariant[], writes = 2_000, rounds = 5, concurrency = 16): Promise<WriteCost[]> {
  const made = variants.map((v) => v.make(endpoint));
  const chunk = 100;
  try {
    for (const m of made) await run(m.send, 300, concurrency);
    const cpu = variants.map(() => [] as number[]);
    const wall = variants.map(() => [] as number[]);
    for (let r = 0; r < rounds; r++) {
      const cpuSum = made.map(() => 0);
      const wallSum = made.map(() => 0);
      for (let c = 0; c * chunk < writes; c++) {
        for (let k = 0; k < made.length; k++) {
          const i = (k + c + r) % made.length;
          const m = made[i] as (typeof made)[number];
          const c0 = process.cpuUsage();
          const w0 = performance.now();
          await run(m.send, chunk, concurrency);
          const used = process.cpuUsage(c0);
          wallSum[i] = (wallSum[i] as number) + (performance.now() - w0) * 1000;
          cpuSum[i] = (cpuSum[i] as number) + used.user + used.system;
        }
      }
      const sent = Math.ceil(writes / chunk) * chunk;
      made.forEach((_, i) => {
        (cpu[i] as number[]).push((cpuSum[i] as number) / sent);
        (wall[i] as number[]).push((wallSum[i] as number) / sent);
      });
    }
    return variants.map((v, i) => ({ name: v.name, cpuMicros: median(cpu[i] as number[]), wallMicros: median(wall[i] as number[]) }));
  } finally {
    for (const m of made) m.close();
  }
}

/**
 * Which part of the request path a profile sample belongs to: the innermost SDK component on its
 * stack (so node's crypto under the signer counts as signing), else node's own HTTP/stream code,
 * else the kernel time of the socket calls.
 */
const PHASES: readonly [RegExp, string][] = [
  [/signature-v4|httpAuthSchemes|submodules\/checksum/, 'SigV4 signing (incl. SHA-256, HMAC)'],
  [/submodules\/endpoints\//, 'endpoint resolution'],
  [/submodules\/retry\//, 'retry middleware'],
  [/node-http-handler|fetch-http-handler/, 'SDK HTTP handler'],
  [/dynamodb-codec|submodules\/(protocols|serde|transport)\//, 'serialize / deserialize'],
  [/submodules\/schema\//, 'serde middleware (config copies)'],
  [/submodules\/client\/|@smithy\/core\/dist-cjs\/index|@aws-sdk\/core\/dist-cjs\/submodules\/client\//, 'middleware stack and other middleware'],
];
const SOCKET_CALLS = new Set(['writev', 'writeUtf8String', 'writeBuffer', 'writeLatin1String', 'read', 'readStart']);

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber?: number };
  children?: number[];
}

export function phaseShares(nodes: readonly ProfileNode[], samples: readonly number[]): [string, number][] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const shares = new Map<string, number>();
  let total = 0;
  for (const id of samples) {
    const leaf = byId.get(id);
    if (!leaf) continue;
    const { functionName: fn, url } = leaf.callFrame;
    if (fn === '(idle)' || fn === '(program)') continue;
    total++;
    let phase: string | undefined;
    if (fn === '(garbage collector)') phase = 'garbage collector';
    else if (url === '' && SOCKET_CALLS.has(fn)) phase = 'kernel: socket send/receive';
    else if (/^node:(_http|net|events|stream|internal\/(streams|stream_base|http|timers|process\/task_queues))/.test(url)) phase = 'node http/net/streams';
    for (let cur: number | undefined = id; phase === undefined && cur !== undefined; cur = parent.get(cur)) {
      const frameUrl = byId.get(cur)?.callFrame.url ?? '';
      phase = PHASES.find(([re]) => re.test(frameUrl))?.[1];
    }
    phase ??= url.startsWith('node:') ? 'node (other)' : 'promise glue, bench loop';
    shares.set(phase, (shares.get(phase) ?? 0) + 1);
  }
  return [...shares].map(([k, v]): [string, number] => [k, v / Math.max(1, total)]).sort((a, b) => b[1] - a[1]);
}

/** Where a client's CPU goes while it sends `writes` requests: sampled profile, share per phase. */
export async function profileClient(endpoint: string, variant: ClientVariant, writes = 2_000, concurrency = 16): Promise<[string, number][]> {
  const m = variant.make(endpoint);
  const session = new Session();
  session.connect();
  try {
    await run(m.send, 300, concurrency);
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    await run(m.send, writes, concurrency);
    const { profile } = await session.post('Profiler.stop');
    return phaseShares(profile.nodes, profile.samples ?? []);
  } finally {
    session.disconnect();
    m.close();
  }
}
