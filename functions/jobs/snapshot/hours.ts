/**
 * Per-hour counter rows of the status table, written by the ingest next to each table's status row:
 *
 *   pipeline = <pipeline name>, table = "hour#<YYYY-MM-DDTHH>#<source table>"
 *   counters: applied, opC, opU, opD, opR, placeholders, beforeNullUpdates, snapshotEvents, resnapshots, …
 *
 * The anomaly checks compare the recent hours with the history these rows keep.
 */
import { type AttributeValue, type DynamoDBClient, QueryCommand, type QueryCommandOutput } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';

const HOUR_MS = 3_600_000;

/** The counters the checks read; absent ones count as 0. */
export const HOUR_COUNTERS = ['applied', 'opC', 'opU', 'opD', 'opR', 'placeholders', 'beforeNullUpdates', 'snapshotEvents', 'resnapshots', 'quarantined'] as const;
export type HourCounter = (typeof HOUR_COUNTERS)[number];

export interface HourRow {
  /** Start of the hour, epoch ms. */
  readonly hourStart: number;
  readonly table: string;
  readonly counters: Readonly<Record<HourCounter, number>>;
}

/** `2026-11-30T06` for any time in that hour (UTC). */
export const hourLabel = (ms: number): string => new Date(ms).toISOString().slice(0, 13);

/** The sort key of a table's row for the hour holding `ms`. */
export const hourRowKey = (ms: number, table: string): string => `hour#${hourLabel(ms)}#${table}`;

/** Parses `hour#2026-11-30T06#public.orders`; null for any other sort key. */
export function parseHourRowKey(key: string): { hourStart: number; table: string } | null {
  const m = /^hour#(\d{4}-\d{2}-\d{2}T\d{2})#(.+)$/.exec(key);
  if (!m?.[1] || !m[2]) return null;
  const hourStart = Date.parse(`${m[1]}:00:00.000Z`);
  return Number.isNaN(hourStart) ? null : { hourStart, table: m[2] };
}

/** The hour rows of the given tables for hours overlapping [fromMs, toMs], oldest first. */
export async function readHourRows(client: DynamoDBClient, statusTable: string, pipeline: string, tables: readonly string[], fromMs: number, toMs: number): Promise<HourRow[]> {
  const wanted = new Set(tables);
  const rows: HourRow[] = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const res: QueryCommandOutput = await client.send(
      new QueryCommand({
        TableName: statusTable,
        KeyConditionExpression: '#p = :p AND #t BETWEEN :from AND :to',
        ExpressionAttributeNames: { '#p': 'pipeline', '#t': 'table' },
        ExpressionAttributeValues: {
          ':p': { S: pipeline },
          ':from': { S: `hour#${hourLabel(Math.floor(fromMs / HOUR_MS) * HOUR_MS)}#` },
          ':to': { S: `hour#${hourLabel(toMs)}#\uffff` },
        },
        ExclusiveStartKey: start,
      }),
    );
    for (const item of res.Items ?? []) {
      const plain = unmarshall(item) as Record<string, unknown>;
      const parsed = typeof plain.table === 'string' ? parseHourRowKey(plain.table) : null;
      if (!parsed || !wanted.has(parsed.table)) continue;
      const counters = Object.fromEntries(HOUR_COUNTERS.map((c) => [c, typeof plain[c] === 'number' ? (plain[c] as number) : 0])) as Record<HourCounter, number>;
      rows.push({ ...parsed, counters });
    }
    start = res.LastEvaluatedKey;
  } while (start);
  return rows.sort((a, b) => a.hourStart - b.hourStart);
}
