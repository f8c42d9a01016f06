/**
 * The keys of one erase run as the erase statements read them: the run's lines of `erase_keys`
 * (functions/sql/schemas-sources.ts), joined by the statements instead of key values written into
 * their text. Athena keeps every query's text in its history for 45 days, out of erase's reach; the
 * text names only the run and the tables.
 *
 *   runKeys('erase-20261130T060000-1a2b3c', true)
 *   // (SELECT k.source_table, k.key_id, k.key_hash, k.request FROM erase_keys k WHERE k.run_id = 'erase-20261130T060000-1a2b3c')
 */
import { bind, call, lit, type Sql, SqlArgumentError, sql } from '../sql.js';
import { tableList } from './common.js';

/** The erase statements' common arguments: the run (its keys) and the tables they belong to. */
export interface EraseRunArgs {
  /** The erase run whose keys `erase_keys` holds under `run_id`. */
  readonly runId: string;
  /** The source tables of the run's keys: the partitions touched. */
  readonly tables: readonly string[];
}

const RUN_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A run id: 1-128 letters, digits, `.`, `_`, `:` and `-` (what the runs are named with). */
export function runIdArg(runId: string): string {
  // Length first: the pattern only ever meets a bounded string.
  if (typeof runId !== 'string' || runId.length > 128 || !RUN_ID.test(runId)) throw new SqlArgumentError(`runId must be 1-128 letters, digits, . _ : -, got "${String(runId).slice(0, 40)}"`);
  return runId;
}

/**
 * `(SELECT k.source_table, k.key_id, k.key_hash, k.request FROM erase_keys k WHERE k.run_id = …)`: the run's
 * keys, the run id bound (SELECT) or, with `inline`, written as a literal (MERGE: Athena takes no
 * parameters there).
 */
export function runKeys(runId: string, inline = false): Sql {
  const id = runIdArg(runId);
  const where = inline ? sql`k.run_id = ${lit(id)}` : sql`k.run_id = ${bind(id)}`;
  return sql`(SELECT k.source_table, k.key_id, k.key_hash, k.request FROM ${call((d) => d.table('erase_keys'))} k WHERE ${where} AND k.key_id IS NOT NULL)`;
}

/** The run's arguments, checked. */
export function eraseRun(args: EraseRunArgs): { runId: string; tables: readonly string[] } {
  return { runId: runIdArg(args.runId), tables: tableList(args.tables) };
}
