/**
 * Per-hour counters of a table, as the anomaly checks read them: its closed hour rows and the open
 * hour of its status row, all in the table's own partition of the status table
 * (functions/telemetry/status-layout.ts):
 *
 *   pipeline = "<pipeline>/<source table>", table = "hour#<YYYY-MM-DDTHH>"
 *   counters: received, applied, opC, opU, opD, opR, placeholders, beforeNullUpdates, snapshotEvents, resnapshots, quarantined
 *
 * The anomaly checks compare the recent hours with the history these rows keep.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { mapLimit } from '../../core/concurrency.js';
import { type HourRow, StatusReader } from '../../adapters/status-reader.js';

export type { HourRow } from '../../adapters/status-reader.js';
export { HOUR_COUNTERS, type HourCounter, hourLabel } from '../../telemetry/status-layout.js';

/** Tables whose hours are read at once. */
const READ_CONCURRENCY = 16;

/** The hour rows of the given tables for hours overlapping [fromMs, toMs], oldest first: one Query (and one status row) per table. */
export async function readHourRows(client: DynamoDBClient, statusTable: string, pipeline: string, tables: readonly string[], fromMs: number, toMs: number): Promise<HourRow[]> {
  const reader = new StatusReader(client, statusTable, pipeline);
  const perTable = await mapLimit(tables, READ_CONCURRENCY, (t) => reader.hourRows(t, fromMs, toMs));
  return perTable.flat().sort((a, b) => a.hourStart - b.hourStart);
}
