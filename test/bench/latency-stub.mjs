// A stand-in for DynamoDB and S3 on 127.0.0.1 that answers just enough for the ingest handler
// (test/bench/wall.ts) and adds a fixed latency to every request, so that a batch's wall time under
// real latency can be measured on one machine. It runs in its own process (its CPU is not the
// handler's) and prints its port on stdout; it stops when its stdin closes.
//
// DynamoDB (JSON 1.0, by X-Amz-Target): PutItem, UpdateItem, DeleteItem answer `{}`; an UpdateItem
// of the status table answers with the row's key as `Attributes` once the key has been seen (a
// status row that exists), `{}` the first time; BatchGetItem answers no items. S3: PUT answers with
// an ETag. Anything else is a 400.
//
// Control: GET /__stub/stats (request counts by operation, per status-table partition key, and
// row writes: writes to tables other than the status table),
// POST /__stub/reset?latency=<ms>&statusTable=<name> (zero the counts, set the latency and which table
// is the status table).
import { createServer } from 'node:http';

let latencyMs = 0;
let statusTable = '';
let byOperation = {};
let byStatusPartition = {};
let rowWrites = 0;
const seen = new Set();

const count = (op) => {
  byOperation[op] = (byOperation[op] ?? 0) + 1;
};
const countPartition = (key) => {
  byStatusPartition[key] = (byStatusPartition[key] ?? 0) + 1;
};

function dynamodb(op, input) {
  count(`dynamodb:${op}`);
  if (op === 'BatchGetItem') {
    for (const [table, req] of Object.entries(input.RequestItems ?? {})) {
      if (table !== statusTable) continue;
      for (const key of new Set((req.Keys ?? []).map((k) => k.pipeline?.S))) countPartition(key);
    }
    return { Responses: {}, UnprocessedKeys: {} };
  }
  if (input.TableName === statusTable) {
    const key = input.Key ?? input.Item ?? {};
    const partition = key.pipeline?.S ?? '';
    countPartition(partition);
    if (op === 'UpdateItem') {
      const id = `${partition}\u0000${key.table?.S ?? ''}`;
      if (seen.has(id)) return { Attributes: { pipeline: key.pipeline, table: key.table } };
      seen.add(id);
    }
  }
  if (op === 'PutItem' || op === 'UpdateItem' || op === 'DeleteItem') {
    if (input.TableName !== statusTable) rowWrites++;
    return {};
  }
  return null;
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const url = new URL(req.url ?? '/', 'http://stub');
    if (url.pathname === '/__stub/stats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ byOperation, byStatusPartition, rowWrites }));
      return;
    }
    if (url.pathname === '/__stub/reset') {
      latencyMs = Number(url.searchParams.get('latency') ?? 0);
      statusTable = url.searchParams.get('statusTable') ?? statusTable;
      byOperation = {};
      byStatusPartition = {};
      rowWrites = 0;
      if (url.searchParams.get('forget') === '1') seen.clear();
      res.writeHead(204);
      res.end();
      return;
    }
    const target = req.headers['x-amz-target'];
    const respond = () => {
      if (typeof target === 'string') {
        const out = dynamodb(target.replace(/^DynamoDB_20120810\./, ''), JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}'));
        res.writeHead(out === null ? 400 : 200, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'stub' });
        res.end(JSON.stringify(out ?? { __type: 'com.amazon.coral.service#UnknownOperationException', message: target }));
        return;
      }
      if (req.method === 'PUT') {
        count('s3:PutObject');
        res.writeHead(200, { etag: '"stub"', 'x-amz-request-id': 'stub' });
        res.end();
        return;
      }
      count(`s3:${req.method}`);
      res.writeHead(400, { 'content-type': 'application/xml' });
      res.end('<Error><Code>NotImplemented</Code><Message>stub</Message></Error>');
    };
    if (latencyMs > 0) setTimeout(respond, latencyMs);
    else respond();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.stdin.on('end', () => server.close(() => process.exit(0)));
process.stdin.resume();
