/**
 * The queries a job step stored for its state machine's query loop (lib/jobs/asl.ts `queryLoop`):
 * written once as a JSON array of `QueryRef`s, read back one at a time, so the state carries an
 * index and a count, never the queries (an hour's compaction is about 7 KB of SQL; a day's would
 * not fit the 256 KB state limit).
 */
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { JobDeps } from './deps.js';
import { JobInputError } from './deps.js';
import type { QueryRef } from './sql-run.js';

export interface StoredQueries {
  readonly queriesKey: string;
  readonly count: number;
}

export async function storeQueries(deps: Pick<JobDeps, 's3' | 'config'>, key: string, queries: readonly QueryRef[]): Promise<StoredQueries> {
  await deps.s3.send(new PutObjectCommand({ Bucket: deps.config.raw.bucket, Key: key, Body: JSON.stringify(queries), ContentType: 'application/json' }));
  return { queriesKey: key, count: queries.length };
}

const cache = new Map<string, readonly QueryRef[]>();

/** The query at `index`, and whether another follows. */
export async function queryAt(input: { queriesKey: string; index: number; count: number }, deps: Pick<JobDeps, 's3' | 'config'>): Promise<{ query: QueryRef; next: number; more: boolean }> {
  let queries = cache.get(input.queriesKey);
  if (!queries) {
    const got = await deps.s3.send(new GetObjectCommand({ Bucket: deps.config.raw.bucket, Key: input.queriesKey }));
    queries = JSON.parse(Buffer.from((await got.Body?.transformToByteArray()) ?? []).toString('utf8')) as QueryRef[];
    if (cache.size > 16) cache.clear();
    cache.set(input.queriesKey, queries);
  }
  const query = queries[input.index];
  if (!query) throw new JobInputError(`no query ${input.index} in ${input.queriesKey} (it holds ${queries.length})`);
  return { query, next: input.index + 1, more: input.index + 1 < queries.length };
}
