/**
 * How far each shard (Kinesis shard, Kafka partition) has been applied, and from that, the source
 * commit time up to which current state is complete (docs/operations.md, "Freshness").
 *
 * After a batch that applied without a failed record, its shard's row records the newest source
 * commit time the batch carried, counting control messages: a Debezium heartbeat, a CockroachDB
 * `resolved` timestamp ("every change up to T has been emitted") and transaction markers move the
 * frontier of a shard whose tables are quiet. A batch with failures marks its shard `failingSince`
 * and moves nothing, so a stuck shard holds the frontier back for as long as it is stuck.
 *
 *   partition `<pipeline>#shards`, row `<stream>/<shard>`: commitTs, at (last batch), failingSince
 *
 * One UpdateItem per batch (100 shards at one batch every 3 s: about 33 writes/s on this partition,
 * under DynamoDB's 1,000 per partition). The frontier is the lowest commit time over the shards
 * that had a batch within {@link ACTIVE_MS} or are failing; a shard with no batch for that long is
 * idle or closed (resharding) and is left out, which the status output says.
 *
 * What "complete as of T" means, and what it does not: every change the source committed at or
 * before T and delivered on a shard in commit order has been applied (or held, for a suspended
 * table). Sources that deliver in commit order per shard (Debezium, Maxwell, Canal, DMS,
 * CockroachDB per partition) give that; Aurora DSQL's randomized, unordered delivery does not, and
 * for it T is only the newest commit seen on every shard.
 */
import { ConditionalCheckFailedException, type DynamoDBClient, QueryCommand, type QueryCommandOutput, UpdateItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import type { ControlEvent, ChangeEvent } from '../core/types.js';
import { STATUS_KEY } from '../telemetry/status-layout.js';

/** A shard without a batch for this long is idle or closed, and no longer holds the frontier back. */
export const ACTIVE_MS = 3_600_000;

export const shardsPartition = (pipeline: string): string => `${pipeline}#shards`;

/** Epoch ms of a CockroachDB resolved timestamp (`<wall ns>.<logical>`), or null. Bounded: no pattern over the input. */
export function resolvedMs(resolved: string): number | null {
  const wall = resolved.slice(0, 40).split('.')[0] ?? '';
  if (wall.length < 7 || wall.length > 20) return null;
  for (let i = 0; i < wall.length; i++) {
    const c = wall.charCodeAt(i);
    if (c < 48 || c > 57) return null;
  }
  const ms = Number(wall.slice(0, -6));
  return Number.isSafeInteger(ms) && ms > 0 ? ms : null;
}

/** The newest source commit time a batch carried: its changes, and its control messages (heartbeats, resolved, markers). */
export function batchCommitFrontier(changes: readonly ChangeEvent[], controls: readonly ControlEvent[]): number | undefined {
  let newest: number | undefined;
  const see = (ts: number | null | undefined) => {
    if (typeof ts === 'number' && Number.isFinite(ts) && (newest === undefined || ts > newest)) newest = ts;
  };
  for (const e of changes) see(e.commitTs);
  for (const c of controls) {
    see(c.commitTs);
    if (c.control === 'resolved' && typeof c.detail.resolved === 'string') see(resolvedMs(c.detail.resolved));
    // A Debezium heartbeat's ts_ms is the connector's clock when it had read the source log that far.
    if (c.control === 'heartbeat' && typeof c.detail.tsMs === 'number') see(c.detail.tsMs);
  }
  return newest;
}

export interface ShardRow {
  readonly shard: string;
  readonly commitTs?: number;
  readonly at?: number;
  readonly failingSince?: number;
}

export interface Frontier {
  /** Every change committed up to here has been applied (see the header for which sources). */
  readonly completeAsOf?: number;
  readonly shards: number;
  readonly failing: number;
  /** Shards left out: no batch within ACTIVE_MS. */
  readonly idle: number;
}

/** The frontier over shard rows at `now`. */
export function frontierOf(rows: readonly ShardRow[], now: number): Frontier {
  let completeAsOf: number | undefined;
  let shards = 0;
  let failing = 0;
  let idle = 0;
  for (const r of rows) {
    const active = r.failingSince !== undefined || (r.at !== undefined && now - r.at <= ACTIVE_MS);
    if (!active) {
      idle++;
      continue;
    }
    shards++;
    if (r.failingSince !== undefined) failing++;
    const ts = r.commitTs ?? Number.NEGATIVE_INFINITY;
    completeAsOf = completeAsOf === undefined ? ts : Math.min(completeAsOf, ts);
  }
  return { ...(completeAsOf !== undefined && Number.isFinite(completeAsOf) ? { completeAsOf } : {}), shards, failing, idle };
}

export class ShardFrontierStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly pipeline: string,
  ) {}

  private key(stream: string, shard: string): Record<string, AttributeValue> {
    return { [STATUS_KEY.partition]: { S: shardsPartition(this.pipeline) }, [STATUS_KEY.row]: { S: `${stream}/${shard}` } };
  }

  /** Records a batch of `shard`: applied through `commitTs` (never lowered), or failing. */
  async record(stream: string, shard: string, outcome: { readonly ok: boolean; readonly commitTs?: number }, now: number): Promise<void> {
    const key = this.key(stream, shard);
    if (!outcome.ok) {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: 'SET #at = :now, #f = if_not_exists(#f, :now)',
          ExpressionAttributeNames: { '#at': 'at', '#f': 'failingSince' },
          ExpressionAttributeValues: { ':now': { N: String(now) } },
        }),
      );
      return;
    }
    const moves = outcome.commitTs !== undefined;
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: `SET #at = :now${moves ? ', #c = :c' : ''} REMOVE #f`,
          ...(moves ? { ConditionExpression: 'attribute_not_exists(#c) OR #c <= :c' } : {}),
          ExpressionAttributeNames: { '#at': 'at', '#f': 'failingSince', ...(moves ? { '#c': 'commitTs' } : {}) },
          ExpressionAttributeValues: { ':now': { N: String(now) }, ...(moves ? { ':c': { N: String(outcome.commitTs) } } : {}) },
        }),
      );
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      // An older batch after a newer one (a redelivered window): the frontier stays; the shard is alive.
      await this.record(stream, shard, { ok: true }, now);
    }
  }

  /** Every shard row of the pipeline. */
  async list(): Promise<ShardRow[]> {
    const rows: ShardRow[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page: QueryCommandOutput = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: '#p = :p',
          ExpressionAttributeNames: { '#p': STATUS_KEY.partition },
          ExpressionAttributeValues: { ':p': { S: shardsPartition(this.pipeline) } },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        const n = (a: string) => (item[a]?.N !== undefined ? Number(item[a]?.N) : undefined);
        const commitTs = n('commitTs');
        const at = n('at');
        const failingSince = n('failingSince');
        rows.push({ shard: item[STATUS_KEY.row]?.S ?? '', ...(commitTs !== undefined ? { commitTs } : {}), ...(at !== undefined ? { at } : {}), ...(failingSince !== undefined ? { failingSince } : {}) });
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return rows;
  }
}
