/**
 * Goal 6: node CPU per DynamoDB write, default SDK client against the tuned one, both sending the
 * same guarded PutItem to a stub HTTP server on 127.0.0.1 (a child process, so its CPU is not
 * counted) that answers every request with `{}` like DynamoDB does for a successful write.
 * A CPU profile of each client shows where the time goes, grouped by package.
 */
import { spawn } from 'node:child_process';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { Session } from 'node:inspector/promises';
import { DynamoDBClient, PutItemCommand, type PutItemCommandInput } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { createClients, destroyClients } from '../../bin/local/clients.js';
import { mapLimit } from '../../functions/ingest/concurrency.js';
import { median } from './cpu.js';

const STUB = `
const http = require('node:http');
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
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

export interface ClientVariant {
  readonly name: string;
  readonly make: (endpoint: string) => { client: DynamoDBClient; close: () => void };
}

const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };

/** The SDK client as constructed with no options beyond where and who. */
export const defaultVariant: ClientVariant = {
  name: 'default SDK client',
  make: (endpoint) => {
    const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials });
    return { client, close: () => client.destroy() };
  },
};

/** A default client with its own keep-alive agent (64 sockets) instead of the SDK's handler defaults. */
export const agentVariant: ClientVariant = {
  name: 'default + keep-alive agent, 64 sockets',
  make: (endpoint) => {
    const client = new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials,
      requestHandler: new NodeHttpHandler({ httpAgent: new HttpAgent({ keepAlive: true, maxSockets: 64 }), httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 64 }) }),
    });
    return { client, close: () => client.destroy() };
  },
};

/** A default client that never retries (shown for its CPU; not applied: throttling needs retries). */
export const noRetryVariant: ClientVariant = {
  name: 'default + maxAttempts 1',
  make: (endpoint) => {
    const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials, maxAttempts: 1 });
    return { client, close: () => client.destroy() };
  },
};

/** The client `createClients` builds (the tuned options live there). */
export const tidemarkVariant: ClientVariant = {
  name: 'tidemark createClients',
  make: (endpoint) => {
    const clients = createClients({ dynamodb: endpoint, kinesis: endpoint, s3: endpoint, region: 'us-east-1', ...credentials });
    return { client: clients.dynamodb, close: () => destroyClients(clients) };
  },
};

export interface WriteCost {
  readonly name: string;
  /** Node CPU (user + system) per write, µs. */
  readonly cpuMicros: number;
  readonly wallMicros: number;
}

async function run(client: DynamoDBClient, writes: number, concurrency: number): Promise<void> {
  const ids = Array.from({ length: writes }, (_, i) => i);
  await mapLimit(ids, concurrency, async (i) => {
    await client.send(new PutItemCommand(sampleWrite(i)));
  });
}

/**
 * CPU per write for each variant: `rounds` rounds of `writes` writes each, sent in chunks of 100
 * that alternate between the variants (in a rotating order), so load changes and garbage
 * collections spread over all of them; median round.
 */
export async function measureClients(endpoint: string, variants: readonly ClientVariant[], writes = 2_000, rounds = 5, concurrency = 16): Promise<WriteCost[]> {
  const made = variants.map((v) => v.make(endpoint));
  const chunk = 100;
  try {
    for (const m of made) await run(m.client, 300, concurrency);
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
          await run(m.client, chunk, concurrency);
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

/** Groups a profile node's script URL into a readable bucket. */
function bucket(url: string, fn: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1] as string;
  if (url.startsWith('node:')) {
    if (/node:(_http|http|net|internal\/(http|net|stream|streams|tls|dns)|stream|events|internal\/(timers|process\/task_queues))/.test(url)) return 'node http/net/streams';
    return 'node (other)';
  }
  if (url === '') return fn === '(garbage collector)' ? 'garbage collector' : fn === '(program)' || fn === '(idle)' ? 'idle/program' : 'native';
  return 'tidemark/bench';
}

/** Self time shares by package while a client sends `writes` writes. */
export async function profileClient(endpoint: string, variant: ClientVariant, writes = 2_000, concurrency = 16): Promise<[string, number][]> {
  const m = variant.make(endpoint);
  const session = new Session();
  session.connect();
  try {
    await run(m.client, 300, concurrency);
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    await run(m.client, writes, concurrency);
    const { profile } = await session.post('Profiler.stop');
    const ticks = new Map<number, number>();
    for (const id of profile.samples ?? []) ticks.set(id, (ticks.get(id) ?? 0) + 1);
    const shares = new Map<string, number>();
    let total = 0;
    for (const node of profile.nodes) {
      const n = ticks.get(node.id) ?? 0;
      const b = bucket(node.callFrame.url, node.callFrame.functionName);
      if (b === 'idle/program') continue;
      shares.set(b, (shares.get(b) ?? 0) + n);
      total += n;
    }
    return [...shares].map(([k, v]): [string, number] => [k, v / Math.max(1, total)]).sort((a, b) => b[1] - a[1]);
  } finally {
    session.disconnect();
    m.close();
  }
}
