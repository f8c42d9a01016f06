/**
 * `tidemark plan`: a dry run. Plans the whole input as one batch against empty state and prints,
 * per key, the state current state must hold. No AWS calls.
 */
import type { TidemarkConfig } from '../../lib/config/config.js';
import { TidemarkError } from '../../functions/core/errors.js';
import { type JsonObject, stringifyJson } from '../../functions/core/json.js';
import { MemoryStore } from '../../functions/core/memory-store.js';
import { Normalizer, type RawRecord } from '../../functions/core/normalize.js';
import { planBatch } from '../../functions/core/plan.js';
import type { ChangeEvent } from '../../functions/core/types.js';
import { type InputShape, readMessages } from './input.js';

/** One key's planned state. */
export interface PlanEntry {
  readonly table: string;
  readonly key: JsonObject;
  readonly deleted: boolean;
  readonly row: JsonObject | null;
  readonly position: string;
  readonly op: string;
  readonly commitTs: number | null;
  readonly missing: readonly string[];
  readonly partial: boolean;
}

export interface PlanReport {
  /** The entries as JSON text, one per key. */
  readonly lines: string[];
  readonly entries: PlanEntry[];
  /** Per table, the format that decoded its changes and their ordering strength (for position notation). */
  readonly formats: Record<string, { readonly format: string; readonly ordering: string }>;
  readonly stats: Record<string, number>;
  readonly problems: { line: number; reason: string }[];
}

export function fileRecords(path: string, shape: InputShape): { records: RawRecord[]; lineOf: number[]; problems: { line: number; reason: string }[] } {
  const { messages, problems } = readMessages(path, shape);
  const records = messages.map<RawRecord>((m) => ({
    value: m.value,
    key: m.key,
    topic: m.topic,
    headers: {},
    transport: { kind: 'file', stream: path, shard: '0', sequence: String(m.line), partitionKey: null, arrivalTime: 0 },
  }));
  return { records, lineOf: messages.map((m) => m.line), problems: [...problems] };
}

function lineAt(lineOf: readonly number[], index: number): number {
  const line = lineOf[index];
  if (line === undefined) throw new TidemarkError(`plan: record ${index} has no input line`);
  return line;
}

export function runPlan(config: TidemarkConfig, path: string, shape: InputShape): PlanReport {
  const normalizer = new Normalizer(config);
  const { records, lineOf, problems } = fileRecords(path, shape);
  const changes: ChangeEvent[] = [];
  let controls = 0;
  const formats: Record<string, { format: string; ordering: string }> = {};
  records.forEach((record, i) => {
    const result = normalizer.normalize(record);
    if (!result.ok) {
      problems.push({ line: lineAt(lineOf, i), reason: `${result.reason}: ${result.detail}` });
      return;
    }
    for (const e of result.events) {
      if (e.kind === 'change') {
        changes.push(e);
        formats[e.table] = { format: e.format, ordering: e.position.strength };
      } else controls++;
    }
  });
  const plan = planBatch(changes, (e) => normalizer.keyIdOf(e));
  const store = new MemoryStore();
  for (const t of plan.truncates) store.truncate(t);
  for (const w of plan.writes) store.apply(w);
  const entries: PlanEntry[] = [];
  for (const table of store.tableNames()) {
    for (const [, item] of store.entries(table)) {
      entries.push({
        table,
        key: item.key as JsonObject,
        deleted: item.deleted,
        row: item.deleted ? null : (item.row as JsonObject),
        position: item.position,
        op: item.op,
        commitTs: item.commitTs,
        missing: item.missing,
        partial: item.partial,
      });
    }
  }
  const lines = entries.map((e) => stringifyJson(e as unknown as JsonObject));
  let superseded = 0;
  let duplicates = 0;
  let conflicts = 0;
  for (const c of plan.counts.values()) {
    superseded += c.superseded + c.truncated;
    duplicates += c.duplicates;
    conflicts += c.conflicts;
  }
  problems.sort((a, b) => a.line - b.line);
  return {
    lines,
    entries,
    formats,
    problems,
    stats: { messages: records.length, events: changes.length, controls, keys: entries.length, writes: plan.writes.length, superseded, duplicates, conflicts, rejected: problems.length },
  };
}
