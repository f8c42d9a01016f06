/**
 * A query a job's state machine runs: the functions/sql statement (name, arguments, and its index
 * among the statements the name builds) and its Athena text, rendered with every value inline
 * (escaped literals: no `ExecutionParameters`, whose list may not be empty). The state machine's
 * Athena task reads `<ref>.athena.QueryString`; the local runner (bin/local/stepfunctions.ts) runs
 * `<ref>.statement` on DuckDB instead, the very statement the text was rendered from.
 *
 *   const refs = queryRefs('compact-hour', { hour }, 'tidemark_shop');
 *   // [{ statement: { name: 'compact-hour', args: { hour }, index: 0 }, athena: { QueryString: 'INSERT INTO …' } }]
 */
import type { TidemarkConfig } from '../config/types.js';
import { historyDatabase } from '../config/types.js';
import { athena, buildStatements, render, type Statement, type StatementArgs, type StatementName } from '../sql/index.js';
import { JobInputError } from './deps.js';

/** Athena's longest query string, in bytes (StartQueryExecution, QueryString: 262,144). */
export const MAX_QUERY_BYTES = 262_144;

export interface StatementRef {
  readonly name: StatementName;
  readonly args: Record<string, unknown>;
  /** Which of the statements `name` builds for `args`, in order. */
  readonly index: number;
}

export interface QueryRef {
  readonly statement: StatementRef;
  readonly athena: { readonly QueryString: string };
}

/** The statement a ref names, rebuilt from its name and arguments. */
export function statementOf(ref: StatementRef): Statement {
  const all = buildStatements(ref.name, ref.args as never);
  const s = all[ref.index];
  if (!s) throw new JobInputError(`statement ${ref.name} has no step ${ref.index} (it builds ${all.length})`);
  return s;
}

/** Every statement `name` builds for `args`, each with its Athena text. Throws JobInputError past Athena's query size. */
export function queryRefs<N extends StatementName>(name: N, args: StatementArgs<N>, database: string): QueryRef[] {
  return buildStatements(name, args).map((s, index) => {
    const r = render(s, athena(database), { inline: true });
    if (r.sql === null) throw new JobInputError(`${s.name} has no Athena form`);
    const bytes = Buffer.byteLength(r.sql, 'utf8');
    if (bytes > MAX_QUERY_BYTES) throw new JobInputError(`${s.name} is ${bytes} bytes of SQL, over Athena's ${MAX_QUERY_BYTES}: narrow the request (fewer keys or tables)`);
    return { statement: { name, args: args as unknown as Record<string, unknown>, index }, athena: { QueryString: r.sql } };
  });
}

/** The refs for the config's history database. */
export const configQueryRefs = <N extends StatementName>(config: Pick<TidemarkConfig, 'name' | 'history'>, name: N, args: StatementArgs<N>): QueryRef[] =>
  queryRefs(name, args, historyDatabase(config));

/** `s3://bucket/key` of a key in the config's raw bucket. */
export const s3Uri = (bucket: string, key: string): string => `s3://${bucket}/${key}`;
