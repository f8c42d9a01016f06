/**
 * Reads a pipeline's status rows the way `tidemark status` and the jobs do (layout in
 * status-layout.ts): the tables of the registry and the config, their status rows, their jobs'
 * last runs, and one table's hours (closed hour rows plus the status row's open hour). Queries
 * only here; the ingest never lists (status-store.ts), so its role holds no `dynamodb:Query`.
 *
 *   const reader = new StatusReader(dynamodb, config.statusTable, config.name);
 *   const rows = await reader.list(config.tables.map((t) => t.source));
 *   const hours = await reader.hourRows('public.orders', from, to);
 */
import { type AttributeValue, BatchGetItemCommand, type BatchGetItemCommandOutput, type DynamoDBClient, QueryCommand, type QueryCommandOutput } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { UNKNOWN_TABLE } from '../telemetry/contract.js';
import {
  HOUR_COUNTERS,
  HOUR_ROW_PREFIX,
  type HourCounter,
  hourLabel,
  hourOfRowKey,
  hourStartOf,
  type JobRowKind,
  jobRowKey,
  SCHEMA_ROW,
  OPEN_HOUR,
  STATUS_KEY,
  STATUS_ROW,
  tablePartition,
  registryPartitions,
} from '../telemetry/status-layout.js';
import { mapLimit } from '../core/concurrency.js';
import type { StatusRow } from './status-store.js';

const HOUR_MS = 3_600_000;

/** One hour of a table's counters: a closed hour row, or the status row's open hour. */
export interface HourRow {
  /** Start of the hour, epoch ms. */
  readonly hourStart: number;
  readonly table: string;
  readonly counters: Readonly<Record<HourCounter, number>>;
}

/** A job's last-run row of a table (`job#reconcile`, `job#snapshot`). */
export interface JobRow extends Record<string, unknown> {
  readonly job: JobRowKind;
  readonly table: string;
}

const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v ?? 0)) || 0;

export class StatusReader {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly pipeline: string,
  ) {}

  /** Tables with a registry row (every table whose status row was ever written). */
  async registeredTables(): Promise<string[]> {
    // One Query per registry partition, 8 at a time; sorted so the order does not depend on the spread.
    const pages = await mapLimit(registryPartitions(this.pipeline), 8, (partition) => this.query(partition));
    const names = pages.flat().map((i) => i[STATUS_KEY.row]?.S ?? '').filter((t) => t !== '');
    return [...new Set(names)].sort();
  }

  /** The tables to show: the registry's, the configured ones and `*`, each once, in that order. */
  async tables(configured: readonly string[] = []): Promise<string[]> {
    return [...new Set([...configured, ...(await this.registeredTables()).filter((t) => t !== UNKNOWN_TABLE), UNKNOWN_TABLE])];
  }

  /** The status rows of `tables` (default: {@link tables}), read consistently, in that order; absent ones left out. */
  async list(configured: readonly string[] = [], tables?: readonly string[]): Promise<StatusRow[]> {
    const wanted = tables ?? (await this.tables(configured));
    const got = await this.batchGet(wanted.map((t) => [tablePartition(this.pipeline, t), STATUS_ROW]));
    return wanted.flatMap((t) => {
      const item = got.get(`${tablePartition(this.pipeline, t)}\u0000${STATUS_ROW}`);
      return item ? [{ ...(unmarshall(item) as Record<string, unknown>), pipeline: this.pipeline, table: t } as StatusRow] : [];
    });
  }

  /** The jobs' last-run rows of `tables`. */
  async jobRows(tables: readonly string[]): Promise<JobRow[]> {
    const jobs: JobRowKind[] = ['reconcile', 'snapshot'];
    const got = await this.tableRows(tables, jobs.map(jobRowKey));
    return tables.flatMap((table) => jobs.flatMap((job) => {
      const row = got.get(table)?.get(jobRowKey(job));
      return row ? [{ ...row, job, table }] : [];
    }));
  }

  /** The closed-hour rows of `tables` for the hour of `hourMs` (layout 2's, not moved layout-1 copies), by table. */
  async hourRowsAt(tables: readonly string[], hourMs: number): Promise<Map<string, Record<string, unknown>>> {
    const row = `${HOUR_ROW_PREFIX}${hourLabel(hourMs)}`;
    const got = await this.tableRows(tables, [row]);
    const out = new Map<string, Record<string, unknown>>();
    for (const t of tables) {
      const item = got.get(t)?.get(row);
      if (item) out.set(t, item);
    }
    return out;
  }

  /**
   * Rows of each of `tables` by row key (`status`, `schema`, `job#snapshot`, …): one BatchGetItem
   * per 100 keys, whatever else the partitions hold. Table → row key → the row's attributes; absent
   * rows left out.
   */
  async tableRows(tables: readonly string[], rows: readonly string[]): Promise<Map<string, Map<string, Record<string, unknown>>>> {
    const keys = tables.flatMap((t) => rows.map((r) => [tablePartition(this.pipeline, t), r] as [string, string]));
    const got = await this.batchGet(keys);
    const out = new Map<string, Map<string, Record<string, unknown>>>();
    for (const t of tables) {
      const byRow = new Map<string, Record<string, unknown>>();
      for (const r of rows) {
        const item = got.get(`${tablePartition(this.pipeline, t)}\u0000${r}`);
        if (item) byRow.set(r, unmarshall(item) as Record<string, unknown>);
      }
      out.set(t, byRow);
    }
    return out;
  }

  /** The recorded-schema rows of `tables` (adapters/schema-store.ts), each with its table. */
  async schemaRows(tables: readonly string[]): Promise<Record<string, unknown>[]> {
    const got = await this.tableRows(tables, [SCHEMA_ROW]);
    return tables.flatMap((t) => {
      const item = got.get(t)?.get(SCHEMA_ROW);
      return item ? [{ ...item, table: t }] : [];
    });
  }

  /**
   * A table's counters per hour for the hours overlapping [fromMs, toMs], oldest first: its closed
   * hour rows (layout-1 hours moved by the migration added in) and the open hour of its status row.
   */
  async hourRows(table: string, fromMs: number, toMs: number): Promise<HourRow[]> {
    const partition = tablePartition(this.pipeline, table);
    const from = hourLabel(Math.floor(fromMs / HOUR_MS) * HOUR_MS);
    const to = hourLabel(toMs);
    const items = await this.query(partition, { range: '#r BETWEEN :from AND :to', values: { ':from': { S: `${HOUR_ROW_PREFIX}${from}` }, ':to': { S: `${HOUR_ROW_PREFIX}${to}#\uffff` } } });
    const byHour = new Map<string, Record<HourCounter, number>>();
    const addTo = (hour: string, read: (c: HourCounter) => unknown) => {
      const sum = byHour.get(hour) ?? (Object.fromEntries(HOUR_COUNTERS.map((c) => [c, 0])) as Record<HourCounter, number>);
      for (const c of HOUR_COUNTERS) sum[c] += num(read(c));
      byHour.set(hour, sum);
    };
    for (const item of items) {
      const hour = hourOfRowKey(item[STATUS_KEY.row]?.S ?? '');
      if (hour === null) continue;
      const plain = unmarshall(item) as Record<string, unknown>;
      addTo(hour, (c) => plain[c]);
    }
    const [status] = await this.list([], [table]);
    const open = typeof status?.[OPEN_HOUR.label] === 'string' ? (status[OPEN_HOUR.label] as string) : null;
    if (status && open !== null && open >= from && open <= to) addTo(open, (c) => status[`${OPEN_HOUR.counterPrefix}${c}`]);
    return [...byHour]
      .map(([hour, counters]) => ({ hourStart: hourStartOf(hour), table, counters }))
      .filter((r) => !Number.isNaN(r.hourStart))
      .sort((a, b) => a.hourStart - b.hourStart);
  }

  /** BatchGetItem of (partition, row) keys, consistent, unprocessed keys followed; keyed `partition\0row`. */
  private async batchGet(keys: readonly (readonly [string, string])[]): Promise<Map<string, Record<string, AttributeValue>>> {
    const out = new Map<string, Record<string, AttributeValue>>();
    for (let i = 0; i < keys.length; i += 100) {
      let pending: Record<string, AttributeValue>[] | undefined = keys.slice(i, i + 100).map(([p, r]) => ({ [STATUS_KEY.partition]: { S: p }, [STATUS_KEY.row]: { S: r } }));
      for (let round = 0; pending && pending.length > 0 && round < 8; round++) {
        const res: BatchGetItemCommandOutput = await this.client.send(new BatchGetItemCommand({ RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true } } }));
        for (const item of res.Responses?.[this.tableName] ?? []) out.set(`${item[STATUS_KEY.partition]?.S}\u0000${item[STATUS_KEY.row]?.S}`, item);
        pending = res.UnprocessedKeys?.[this.tableName]?.Keys;
      }
    }
    return out;
  }

  /** Every item of a partition, or of a sort-key range of it (`#r` names the sort key). */
  private async query(partition: string, range?: { range: string; values: Record<string, AttributeValue> }): Promise<Record<string, AttributeValue>[]> {
    const items: Record<string, AttributeValue>[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const res: QueryCommandOutput = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: range ? `#p = :p AND ${range.range}` : '#p = :p',
          ExpressionAttributeNames: { '#p': STATUS_KEY.partition, ...(range ? { '#r': STATUS_KEY.row } : {}) },
          ExpressionAttributeValues: { ':p': { S: partition }, ...(range?.values ?? {}) },
          ExclusiveStartKey: start,
        }),
      );
      items.push(...(res.Items ?? []));
      start = res.LastEvaluatedKey;
    } while (start);
    return items;
  }
}
