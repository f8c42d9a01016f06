/**
 * The fault matrix (issue 10, "Proof"): one Debezium PostgreSQL workload (bin/cli/demo-workload.ts:
 * snapshot reads, inserts, updates, unchanged-TOAST placeholders, deletes, a redelivered window, plus
 * two undecodable records) is delivered through the Lambda's own code path (`handleEvent` with
 * Kinesis-shaped events, real clients on the embedded emulators) by a stand-in for the Kinesis event
 * source mapping that behaves as Lambda's does: a batch that reports `batchItemFailures` is retried
 * from its lowest failed record; an invocation that throws or whose process dies is retried whole, in
 * a fresh container (cold start: new deps, no in-memory high-water marks); after `maxRetries` the
 * failed part goes, whole records included, to the on-failure output, and is redelivered after the
 * outage (as `tidemark replay --from-dlq` re-ingests it).
 *
 * Each fault is injected by a small wrapper around the deps or their clients' `send` (no network
 * tricks), bounded in count. Each run must end with tables equal to a clean run's (on separate
 * tables), and every record must be in raw, in quarantine, or in the on-failure output.
 *
 * Run with `node bin/with-loopback.mjs node --import tsx --test test/integration/faults.test.ts`.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { demoWorkload } from '../../bin/cli/demo-workload.js';
import { kinesisEvent, type ShapedRecord } from '../../bin/cli/kinesis-shape.js';
import { scanTable, statusRows } from '../../bin/cli/state.js';
import { releaseTable } from '../../bin/cli/lifecycle.js';
import { runReplayLocally } from '../../bin/cli/replay.js';
import { onFailureRecord, parseOnFailureRecord } from '../../bin/local/on-failure.js';
import { streamNameOf } from '../../bin/local/provision.js';
import { handleEvent } from '../../functions/ingest.js';
import { parseConfig, type TidemarkConfig } from '../../lib/config/config.js';
import type { RuntimeClients } from '../../functions/adapters/clients.js';
import { EXPIRES_AT_ATTRIBUTE } from '../../functions/telemetry/contract.js';
import { errorMessage } from '../../functions/core/errors.js';
import { type JsonObject, stringifyJson } from '../../functions/core/json.js';
import { CollectingMetricSink, type Log } from '../../functions/telemetry/sinks.js';
import { ingestDeps, replayContext } from '../../functions/composition.js';
import { addSummary, type BatchSummary, emptySummary, type IngestDeps } from '../../functions/ingest/process-batch.js';
import { openTarget, type Target, uniqueConfig } from '../helpers/target.js';

const base = parseConfig({
  name: 'faults',
  tables: [
    { source: 'public.customers', target: 'faults-customers', key: ['id'], keyTypes: { id: 'number' } },
    { source: 'public.orders', target: 'faults-orders', key: ['order_id'], keyTypes: { order_id: 'number' } },
  ],
  raw: { bucket: 'faults-raw' },
});

const SHARD = 'shardId-000000000000';
const BATCH_SIZE = 25;
/** Raw landing gives up fast here, so an S3 outage outlasts it within a test's time. */
const LANDING = { budgetMs: 400 } as const;
const WRITE_COMMANDS = new Set(['UpdateItemCommand', 'PutItemCommand', 'DeleteItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand']);

/** One workload for every run, so the clean run and each faulty run see the same bytes. */
const workload = demoWorkload({ customers: 10, orders: 15, changes: 280, seed: 7 });
const records: ShapedRecord[] = [
  ...workload.messages.map((m) => ({ partitionKey: m.partitionKey, value: m.value })),
  // Two records no decoder accepts: they must end in quarantine in every run.
  { partitionKey: 'bad-1', value: '{"before": null, "after": {"id": 1' },
  { partitionKey: 'bad-2', value: '{"hello": "world"}' },
].map((m, i) => ({
  data: Buffer.from(m.value, 'utf8'),
  partitionKey: m.partitionKey,
  // Kinesis-like sequence numbers: same length, strictly increasing.
  sequenceNumber: (10n ** 25n + BigInt(i) * 1000n).toString(),
  arrival: new Date(1_767_225_600_000 + i),
}));

class Crash extends Error {
  override name = 'Crash';
}

/** An error shaped as the SDK raises it once its own retries are spent. */
function serviceError(name: string, status: number): Error {
  return Object.assign(new Error(`${name} (injected)`), { name, $fault: status >= 500 ? 'server' : 'client', $metadata: { httpStatusCode: status } });
}

const quiet: Log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** What a fault sees: the invocation number (1-based, retries included) and a way to kill the process. */
interface FaultContext {
  readonly invocation: number;
  /** Ends the process now: every later call of this container fails, its response is never seen. */
  die(reason: string): never;
  readonly stats: Record<string, number>;
}

interface Fault {
  /** Event-source-mapping retries before the on-failure output. @default 5 */
  readonly maxRetries?: number;
  readonly s3Send?: (command: string, input: JsonObject, ctx: FaultContext) => void;
  readonly dynamoSend?: (command: string, input: JsonObject, ctx: FaultContext) => void;
  readonly wrap?: (deps: IngestDeps, ctx: FaultContext) => IngestDeps;
}

interface Delivery {
  readonly invocations: number;
  readonly partialFailures: number;
  readonly crashes: number;
  /** On-failure lines (Lambda's S3 on-failure shape), before redelivery. */
  readonly onFailure: string[];
  /** Every summary the handler produced, added up (a dead invocation may produce none). */
  readonly totals: BatchSummary;
  /** Row writes DynamoDB accepted (target tables, dead invocations included). */
  readonly rowWrites: number;
}

interface Env {
  readonly config: TidemarkConfig;
  readonly stream: string;
}

type Sender = { send: (command: { constructor: { name: string }; input?: unknown }, ...rest: unknown[]) => Promise<unknown> };

describe('fault matrix through handleEvent (embedded emulators)', () => {
  let target: Target;
  const configs: TidemarkConfig[] = [];
  let clean: { state: JsonObject[][]; delivery: Delivery };

  async function fresh(): Promise<Env> {
    const config = uniqueConfig(base);
    configs.push(config);
    await target.setup(config);
    return { config, stream: streamNameOf(config) };
  }

  /** A container: deps built as at cold start, over clients whose `send` passes through the fault hooks. */
  function container(env: Env, fault: Fault, ctx: { invocation: number; stats: Record<string, number>; totals: BatchSummary }) {
    const state = { dead: false };
    const faultCtx: FaultContext = {
      get invocation() {
        return ctx.invocation;
      },
      stats: ctx.stats,
      die: (reason: string): never => {
        state.dead = true;
        throw new Crash(reason);
      },
    };
    const targets = new Set(env.config.tables.map((t) => t.target));
    const guard = <T extends object>(client: T, hook: Fault['s3Send']): T => {
      const inner = client as unknown as Sender;
      const wrapped = Object.create(client) as T & Sender;
      wrapped.send = async (command, ...rest) => {
        if (state.dead) throw new Crash('the process is dead');
        const input = (command.input ?? {}) as JsonObject;
        hook?.(command.constructor.name, input, faultCtx);
        const out = await inner.send(command, ...rest);
        if (WRITE_COMMANDS.has(command.constructor.name) && targets.has(String(input.TableName))) ctx.stats.rowWrites = (ctx.stats.rowWrites ?? 0) + 1;
        return out;
      };
      return wrapped;
    };
    const clients: RuntimeClients = { dynamodb: guard(target.clients.dynamodb, fault.dynamoSend), s3: guard(target.clients.s3, fault.s3Send) };
    const deps: IngestDeps = {
      ...ingestDeps(env.config, clients, { metrics: new CollectingMetricSink(), log: quiet }),
      landing: LANDING,
      onSummary: (summary) => addSummary(ctx.totals, summary),
    };
    return { state, deps: fault.wrap ? fault.wrap(deps, faultCtx) : deps };
  }

  /** The event source mapping: batches in order, retries from the lowest failed record, on-failure after maxRetries. */
  async function deliver(env: Env, fault: Fault, stats: Record<string, number> = {}): Promise<Delivery> {
    const maxRetries = fault.maxRetries ?? 5;
    const ctx = { invocation: 0, stats, totals: emptySummary() };
    let c = container(env, fault, ctx);
    let pos = 0;
    let attempts = 0;
    let partialFailures = 0;
    let crashes = 0;
    const onFailure: string[] = [];
    while (pos < records.length) {
      const batch = records.slice(pos, pos + BATCH_SIZE);
      const event = kinesisEvent(env.stream, SHARD, batch);
      ctx.invocation++;
      let failedFrom: string | undefined;
      let error: string | undefined;
      try {
        const response = await handleEvent(event, c.deps);
        failedFrom = response.batchItemFailures[0]?.itemIdentifier;
      } catch (err) {
        error = errorMessage(err);
        failedFrom = batch[0]?.sequenceNumber;
      }
      if (c.state.dead || error !== undefined) {
        // A dead or failed invocation: nothing it answered counts, the whole batch comes again, to a fresh container.
        crashes++;
        failedFrom = batch[0]?.sequenceNumber;
        c = container(env, fault, ctx);
      } else if (failedFrom !== undefined) partialFailures++;
      if (failedFrom === undefined) {
        pos += batch.length;
        attempts = 0;
        continue;
      }
      attempts++;
      const failedIndex = Math.max(0, batch.findIndex((r) => r.sequenceNumber === failedFrom));
      if (attempts > maxRetries) {
        onFailure.push(JSON.stringify(onFailureRecord({ Records: event.Records.slice(failedIndex) }, attempts, error ?? 'BatchItemFailures')));
        pos += batch.length;
        attempts = 0;
      } else {
        pos += failedIndex;
        await sleep(20 * attempts);
      }
    }
    // After the outage: the on-failure batches are redelivered whole (what `replay --from-dlq` re-ingests).
    for (const line of onFailure) {
      const { event } = parseOnFailureRecord(line);
      let ok = false;
      for (let attempt = 0; attempt < 5 && !ok; attempt++) {
        ctx.invocation++;
        const r = await handleEvent(event, c.deps).catch(() => undefined);
        ok = r !== undefined && r.batchItemFailures.length === 0 && !c.state.dead;
        if (!ok) c = container(env, fault, ctx);
      }
      assert.ok(ok, 'the on-failure batch applies once the outage is over');
    }
    return { invocations: ctx.invocation, partialFailures, crashes, onFailure, totals: ctx.totals, rowWrites: stats.rowWrites ?? 0 };
  }

  /** Both tables, tombstones included, without the attributes that depend on the wall clock. */
  async function tableState(env: Env): Promise<JsonObject[][]> {
    const out: JsonObject[][] = [];
    for (const table of env.config.tables) {
      const rows: JsonObject[] = [];
      for await (const item of scanTable(target.clients.dynamodb, table, true)) {
        const plain = JSON.parse(stringifyJson(item)) as JsonObject;
        delete plain.__appliedAt;
        delete plain[EXPIRES_AT_ATTRIBUTE];
        rows.push(plain);
      }
      const keyOf = (r: JsonObject) => JSON.stringify(table.key.map((k) => r[k]));
      out.push(rows.sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1)));
    }
    return out;
  }

  /** The sequence numbers held by the gzip JSON-lines objects under a prefix. */
  async function sequencesUnder(env: Env, prefix: string): Promise<Set<string>> {
    const seen = new Set<string>();
    let token: string | undefined;
    do {
      const page = await target.clients.s3.send(new ListObjectsV2Command({ Bucket: env.config.raw.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of page.Contents ?? []) {
        if (!o.Key || o.Key.startsWith(`${env.config.raw.prefix}spill/`)) continue;
        const got = await target.clients.s3.send(new GetObjectCommand({ Bucket: env.config.raw.bucket, Key: o.Key }));
        const text = gunzipSync(Buffer.from(await (got.Body?.transformToByteArray() ?? Promise.resolve(new Uint8Array())))).toString('utf8');
        for (const line of text.split('\n')) {
          if (line) seen.add(String((JSON.parse(line) as { transport: { sequence: string } }).transport.sequence));
        }
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return seen;
  }

  /** Every record is in raw, quarantine or the on-failure output; returns the quarantined count. */
  async function assertNoneLost(env: Env, delivery: Delivery): Promise<{ quarantined: number; raw: number }> {
    const raw = await sequencesUnder(env, env.config.raw.prefix);
    const quarantine = await sequencesUnder(env, env.config.raw.quarantinePrefix);
    const onFailure = new Set(delivery.onFailure.flatMap((l) => parseOnFailureRecord(l).event.Records.map((r) => r.kinesis.sequenceNumber)));
    const lost = records.filter((r) => !raw.has(r.sequenceNumber) && !quarantine.has(r.sequenceNumber) && !onFailure.has(r.sequenceNumber));
    assert.deepEqual(
      lost.map((r) => r.sequenceNumber),
      [],
      `${lost.length} records are in neither raw, quarantine nor on-failure`,
    );
    // After redelivery, raw and quarantine alone hold every record.
    assert.ok(
      records.every((r) => raw.has(r.sequenceNumber) || quarantine.has(r.sequenceNumber)),
      'after redelivery, raw or quarantine holds every record',
    );
    return { quarantined: records.filter((r) => quarantine.has(r.sequenceNumber) && !raw.has(r.sequenceNumber)).length, raw: raw.size };
  }

  async function runFault(fault: Fault, stats: Record<string, number> = {}, t?: { diagnostic(message: string): void }): Promise<Delivery> {
    const env = await fresh();
    const delivery = await deliver(env, fault, stats);
    const injected = Object.entries(stats).filter(([k]) => !k.includes('@') && k !== 'rowWrites');
    t?.diagnostic(
      `${records.length} records, ${delivery.invocations} invocations, ${delivery.crashes} crashes, ${delivery.partialFailures} partial failures, ${delivery.onFailure.length} on-failure batches; ${injected.map(([k, v]) => `${k} ${v}`).join(', ')}`,
    );
    const state = await tableState(env);
    assert.deepEqual(state, clean.state, 'end state equals the clean run');
    const { quarantined } = await assertNoneLost(env, delivery);
    assert.equal(quarantined, 2, 'the two undecodable records are quarantined, as in the clean run');
    return delivery;
  }

  /**
   * Batch boundaries did not move (whole-batch redelivery), so the writes DynamoDB applied, dead
   * invocations included, are exactly the clean run's: a redelivered write is a duplicate or stale,
   * never applied twice.
   */
  const assertAppliedOnce = (d: Delivery, appliedBeforeCrash: boolean) => {
    assert.equal(d.rowWrites, clean.delivery.rowWrites, 'no row written twice');
    if (appliedBeforeCrash) {
      const redelivered = d.totals.duplicates + d.totals.stale - (clean.delivery.totals.duplicates + clean.delivery.totals.stale);
      assert.ok(redelivered > 0, 'the redelivered writes were read as duplicates or stale');
    }
  };

  /** Dies at the given invocations (each once): a crash bounded in count. */
  const dieAt = (invocations: readonly number[], ctx: FaultContext, reason: string) => {
    if (invocations.includes(ctx.invocation) && ctx.stats[`died@${ctx.invocation}`] === undefined) {
      ctx.stats[`died@${ctx.invocation}`] = 1;
      ctx.stats.crashes = (ctx.stats.crashes ?? 0) + 1;
      ctx.die(reason);
    }
  };

  before(async () => {
    target = await openTarget();
    const env = await fresh();
    const delivery = await deliver(env, {});
    clean = { state: await tableState(env), delivery };
  });

  after(async () => {
    for (const c of configs) await target?.teardown(c).catch(() => {});
    await target?.close();
  });

  it('the clean run applies the workload exactly: the model rows, every record in raw or quarantine', async () => {
    assert.equal(clean.delivery.crashes + clean.delivery.partialFailures + clean.delivery.onFailure.length, 0);
    const [customers = [], orders = []] = clean.state;
    const live = (rows: JsonObject[]) => rows.filter((r) => r.__deleted !== true);
    const columns = (r: JsonObject) => Object.fromEntries(Object.entries(r).filter(([k]) => !k.startsWith('__')));
    const model = (m: Map<number, JsonObject>) => [...m.values()].map((r) => JSON.parse(JSON.stringify(r)) as JsonObject);
    const byKey = (k: string) => (a: JsonObject, b: JsonObject) => Number(a[k]) - Number(b[k]);
    assert.deepEqual(live(customers).map(columns).sort(byKey('id')), model(workload.expected['public.customers']).sort(byKey('id')));
    assert.deepEqual(live(orders).map(columns).sort(byKey('order_id')), model(workload.expected['public.orders']).sort(byKey('order_id')));
    assert.ok(orders.length > live(orders).length, 'the workload deleted some orders (tombstones kept)');
    assert.ok(records.length >= 300, `${records.length} records`);
  });

  it('1. crash before raw landing: the batch is redelivered whole and converges', async (t) => {
    const stats: Record<string, number> = {};
    const d = await runFault(
      {
        wrap: (deps, ctx) => ({
          ...deps,
          raw: {
            land: async (...args) => {
              dieAt([2, 6, 9], ctx, 'crash before raw landing');
              return deps.raw.land(...args);
            },
            quarantine: (...args) => deps.raw.quarantine(...args),
          },
        }),
      },
      stats,
      t,
    );
    assert.equal(stats.crashes, 3);
    assert.equal(d.crashes, 3);
    assertAppliedOnce(d, false);
  });

  it('2. crash after raw, before apply: the batch is redelivered whole and converges', async (t) => {
    const stats: Record<string, number> = {};
    const d = await runFault(
      {
        wrap: (deps, ctx) => ({
          ...deps,
          writer: {
            seedHighWater: (t, p) => deps.writer.seedHighWater(t, p),
            write: (w) => deps.writer.write(w),
            writeAll: async (...args) => {
              dieAt([3, 7, 11], ctx, 'crash after raw, before apply');
              return deps.writer.writeAll(...args);
            },
          },
        }),
      },
      stats,
      t,
    );
    assert.equal(stats.crashes, 3);
    assert.equal(d.crashes, 3);
    assertAppliedOnce(d, false);
  });

  it('3. crash mid-apply (after N writes of a batch): redelivered whole to a fresh container, converges', async (t) => {
    const stats: Record<string, number> = {};
    const plan = new Map([
      [2, 3],
      [5, 11],
      [8, 1],
    ]);
    const targets = new Set<string>();
    const d = await runFault(
      {
        dynamoSend: (command, input, ctx) => {
          if (targets.size === 0) for (const c of configs) for (const t of c.tables) targets.add(t.target);
          const limit = plan.get(ctx.invocation);
          if (limit === undefined || !WRITE_COMMANDS.has(command) || !targets.has(String(input.TableName))) return;
          const key = `writes@${ctx.invocation}`;
          ctx.stats[key] = (ctx.stats[key] ?? 0) + 1;
          if ((ctx.stats[key] ?? 0) > limit) dieAt([ctx.invocation], ctx, 'crash mid-apply');
        },
      },
      stats,
      t,
    );
    assert.equal(d.crashes, 3);
    assertAppliedOnce(d, true);
    assert.deepEqual([stats['writes@2'], stats['writes@5'], stats['writes@8']], [4, 12, 2], 'each crash came after N writes went out');
  });

  it('4. crash after apply, before the checkpoint: the applied batch is redelivered whole and converges', async (t) => {
    const stats: Record<string, number> = {};
    const d = await runFault(
      {
        wrap: (deps, ctx) => ({
          ...deps,
          status: {
            load: (t) => deps.status.load(t),
            raiseTruncateWatermark: (t, p) => deps.status.raiseTruncateWatermark(t, p),
            record: async (...args) => {
              dieAt([2, 4, 10], ctx, 'crash after apply, before the checkpoint');
              return deps.status.record(...args);
            },
          },
        }),
      },
      stats,
      t,
    );
    assert.equal(stats.crashes, 3);
    assert.equal(d.crashes, 3);
    assertAppliedOnce(d, true);
  });

  it('5. S3 outage longer than the landing retries and the mapping retries: on-failure holds whole records, redelivered after the outage', async (t) => {
    const stats: Record<string, number> = {};
    // Invocations 3..7 find S3 down: one batch fails 3 times (maxRetries 2) and goes to on-failure, the next fails twice then lands.
    const d = await runFault(
      {
        maxRetries: 2,
        s3Send: (command, _input, ctx) => {
          if (command === 'PutObjectCommand' && ctx.invocation >= 3 && ctx.invocation <= 7) {
            ctx.stats.s3Failures = (ctx.stats.s3Failures ?? 0) + 1;
            throw serviceError('ServiceUnavailable', 503);
          }
        },
      },
      stats,
      t,
    );
    assert.equal(d.onFailure.length, 1, 'one batch outlasted the retries');
    const kept = parseOnFailureRecord(d.onFailure[0] ?? '').event.Records;
    assert.equal(kept.length, BATCH_SIZE, 'the whole failed batch');
    const delivered = new Map(records.map((r) => [r.sequenceNumber, Buffer.from(r.data).toString('base64')]));
    for (const r of kept) assert.equal(r.kinesis.data, delivered.get(r.kinesis.sequenceNumber), 'with each record\'s exact bytes');
    assert.equal(d.partialFailures, 5, 'each invocation during the outage reported the batch failed');
    assert.ok((stats.s3Failures ?? 0) >= 10, `landing retried within its budget (${stats.s3Failures} failed PUTs)`);
  });

  it('6. DynamoDB outage longer than the SDK retries: batchItemFailures, then redelivery converges', async (t) => {
    const stats: Record<string, number> = {};
    const d = await runFault(
      {
        dynamoSend: (command, _input, ctx) => {
          if (WRITE_COMMANDS.has(command) && ctx.invocation >= 2 && ctx.invocation <= 4) {
            ctx.stats.dynamoFailures = (ctx.stats.dynamoFailures ?? 0) + 1;
            throw serviceError('InternalServerError', 500);
          }
        },
      },
      stats,
      t,
    );
    assert.equal(d.partialFailures, 3);
    assert.equal(d.crashes, 0);
    assert.equal(d.onFailure.length, 0);
    assert.ok((stats.dynamoFailures ?? 0) > 0);
  });

  it('7. throttling storm (~30% of writes for a while, bounded): converges with no loss', async (t) => {
    const stats: Record<string, number> = {};
    // Which writes are throttled depends on the write (its table, key and how many times it was
    // sent), not on the order requests go out in: ingest sends the tables of a batch concurrently.
    const sent = new Map<string, number>();
    const throttledWrite = (command: string, input: JsonObject): boolean => {
      const item = (input.Key ?? input.Item ?? {}) as JsonObject;
      const id = `${command}|${String(input.TableName)}|${JSON.stringify(Object.entries(item).filter(([k]) => !k.startsWith('__')))}`;
      const n = (sent.get(id) ?? 0) + 1;
      sent.set(id, n);
      return createHash('sha256').update(`1234|${id}|${n}`).digest().readUInt32BE(0) / 2 ** 32 < 0.3;
    };
    const d = await runFault(
      {
        maxRetries: 10,
        dynamoSend: (command, input, ctx) => {
          if (!WRITE_COMMANDS.has(command) || ctx.invocation > 12 || (ctx.stats.throttled ?? 0) >= 120) return;
          if (throttledWrite(command, input)) {
            ctx.stats.throttled = (ctx.stats.throttled ?? 0) + 1;
            throw serviceError('ProvisionedThroughputExceededException', 400);
          }
        },
      },
      stats,
      t,
    );
    assert.ok((stats.throttled ?? 0) >= 20, `${stats.throttled} throttled writes`);
    assert.ok(d.partialFailures >= 3, `${d.partialFailures} partial failures`);
    assert.equal(d.onFailure.length, 0);
  });

  it('8. a table stopped in error during an S3 outage loses nothing: its records land, the other table converges, resume restores it', async (t) => {
    const stats: Record<string, number> = {};
    const env = await fresh();
    const orders = env.config.tables[1]?.target;
    // The orders target refuses every write for good (as a deleted table does) until invocation 9; S3 is down for invocations 3..5.
    const delivery = await deliver(
      env,
      {
        dynamoSend: (command, input, ctx) => {
          if (WRITE_COMMANDS.has(command) && input.TableName === orders && ctx.invocation <= 8) {
            ctx.stats.refused = (ctx.stats.refused ?? 0) + 1;
            throw serviceError('ResourceNotFoundException', 400);
          }
        },
        s3Send: (command, _input, ctx) => {
          if (command === 'PutObjectCommand' && ctx.invocation >= 3 && ctx.invocation <= 5) {
            ctx.stats.s3Failures = (ctx.stats.s3Failures ?? 0) + 1;
            throw serviceError('ServiceUnavailable', 503);
          }
        },
      },
      stats,
    );
    t.diagnostic(`${delivery.invocations} invocations, ${delivery.partialFailures} partial failures, ${delivery.onFailure.length} on-failure; refused ${stats.refused}, s3 failures ${stats.s3Failures}`);
    assert.ok((stats.refused ?? 0) > 0 && (stats.s3Failures ?? 0) > 0, 'both faults happened');
    assert.equal(delivery.onFailure.length, 0, 'the stopped table never held the shard back to the on-failure output');
    const { quarantined } = await assertNoneLost(env, delivery);
    assert.equal(quarantined, 2);
    const status = await statusRows(target.clients.dynamodb, env.config);
    assert.equal(status.find((r) => r.table === 'public.orders')?.lifecycle, 'error');
    const state = await tableState(env);
    assert.deepEqual(state[0], clean.state[0], 'the other table converged as in the clean run');
    assert.ok((delivery.totals.held ?? 0) > 0);

    // Resume: back to running, then the orders raw replayed under the guard: the clean run's state.
    await releaseTable(target.clients.dynamodb, env.config, 'public.orders', true, Date.now());
    const ctx = replayContext(env.config, target.clients, quiet);
    // The workload landed with its own (old) arrival times: past the tombstone horizon, so forced, as resume --force does.
    await runReplayLocally(ctx, { runId: 'resume-orders', tables: ['public.orders'], into: 'live', now: Date.now(), force: true });
    assert.deepEqual(await tableState(env), clean.state, 'end state equals the clean run');
  });
});
