/**
 * Reads a pipeline's status rows the way `tidemark status` and the jobs do: every status row, and
 * the per-hour counter rows of a range (see status-store.ts for what they hold). Queries only; the
 * ingest never lists (status-store.ts), so its role holds no `dynamodb:Query`.
 *
 *   const rows = await new StatusReader(dynamodb, config.statusTable, config.name).list();
 */
import { type AttributeValue, type DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { HOUR_ROW_PREFIX, STATUS_KEY } from '../telemetry/contract.js';
import type { StatusRow } from './status-store.js';

/** A per-hour counter row, with its hour and source table read back from the sort key. */
export interface HourRow extends StatusRow {
  readonly hour: string;
  readonly sourceTable: string;
}

/** Sorts just after every `hour#…` key: status rows of source tables live outside [hour#, hour$). */
const HOUR_ROW_END = `${HOUR_ROW_PREFIX.slice(0, -1)}$`;

export class StatusReader {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly pipeline: string,
  ) {}

  /** Every status row of the pipeline (per-hour rows excluded: they sort between `hour#` and `hour$`). */
  async list(): Promise<StatusRow[]> {
    const below = await this.query('#t < :a', { ':a': { S: HOUR_ROW_PREFIX } });
    const above = await this.query('#t > :b', { ':b': { S: HOUR_ROW_END } });
    return [...below, ...above];
  }

  /** Per-hour counter rows from `fromHour` to `toHour` inclusive (`YYYY-MM-DDTHH`), e.g. for anomaly detection. */
  async hourRows(fromHour: string, toHour: string): Promise<HourRow[]> {
    const rows = await this.query('#t BETWEEN :a AND :b', { ':a': { S: `${HOUR_ROW_PREFIX}${fromHour}` }, ':b': { S: `${HOUR_ROW_PREFIX}${toHour}#\uffff` } });
    return rows.map((r) => {
      const rest = r.table.slice(HOUR_ROW_PREFIX.length);
      const cut = rest.indexOf('#');
      return { ...r, hour: rest.slice(0, cut), sourceTable: rest.slice(cut + 1) };
    });
  }

  private async query(range: string, values: Record<string, AttributeValue>): Promise<StatusRow[]> {
    const rows: StatusRow[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const res = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: `#p = :p AND ${range}`,
          ExpressionAttributeNames: { '#p': STATUS_KEY.pipeline, '#t': STATUS_KEY.table },
          ExpressionAttributeValues: { ':p': { S: this.pipeline }, ...values },
          ExclusiveStartKey: start,
        }),
      );
      for (const item of res.Items ?? []) rows.push(unmarshall(item) as StatusRow);
      start = res.LastEvaluatedKey;
    } while (start);
    return rows;
  }

}
