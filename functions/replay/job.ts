/**
 * The replay job's shared parts: its request, manifest and context types, and the two steps that
 * follow the per-bucket applies of the SQL machine (sql-job.ts, which plans, selects and applies),
 * shared by the Step Functions tasks on AWS and the local run of the same definition
 * (bin/local/stepfunctions.ts):
 *
 *   summarize add the bucket results up, write the summary next to them
 *   verify    (fresh only) full diff of fresh against live, and the steps to switch readers
 *
 * S3 layout, in the raw bucket: <jobsPrefix>replay/<runId>/{manifest.json, keys.json, queries.json,
 * events/, buckets.json, results/<bucket>.json, summary.json}. Items stay tiny (a bucket number), so
 * the Map's input never nears Step Functions' payload limit.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { TidemarkConfig } from '../config/types.js';
import { TidemarkError } from '../core/errors.js';
import { jobRunPrefix, resultsPrefix, runFile } from '../adapters/raw-layout.js';
import type { Storage } from '../adapters/storage.js';
import type { KeyRef, Log } from '../telemetry/sinks.js';
import { addTally, emptyTally, type ReplayTally } from './engine.js';
import type { ReplayClients } from './deps.js';
import { type DiffReport, diffTables, switchSteps } from './fresh.js';
import type { ReplayTarget } from './safety.js';
import { getJson, putJson } from '../adapters/s3-json.js';

/** What the CLI (or an operator starting the state machine) asks for. Times are epoch ms. */
export interface ReplayRequest {
  readonly runId: string;
  /** Source tables; empty means every configured table. */
  readonly tables: readonly string[];
  readonly since?: number;
  readonly until?: number;
  readonly fromPosition?: string;
  readonly toPosition?: string;
  /** Canonical keys per table, stored by the CLI at <run>/keys.json when `--keys` was given. */
  readonly keysKey?: string;
  /** `live` or `fresh:<table>`. */
  readonly into: string;
  readonly force?: boolean;
  /** Evaluation time for the safety check. @default Date.now() */
  readonly now?: number;
}

export interface ReplayManifest {
  readonly runId: string;
  readonly request: ReplayRequest;
  readonly tables: readonly string[];
  readonly target: ReplayTarget;
  /** Raw objects the job read itself: 0 on SQL, where the selection query reads history and raw. */
  readonly objects: number;
  readonly oldestLanding: number | null;
  /** Where the selection's rows are, by key bucket (sql-job.ts). */
  readonly sql: { readonly eventsPrefix: string; readonly buckets: number; readonly uncompactedFrom: number };
}

export interface BatchOutput {
  readonly batch: number;
  readonly tally: ReplayTally;
  readonly failures: number;
  [k: string]: unknown;
}

export interface ReplaySummary {
  readonly runId: string;
  readonly target: string;
  readonly tables: readonly string[];
  readonly objects: number;
  readonly batches: number;
  readonly batchesDone: number;
  readonly tally: ReplayTally;
  readonly summaryKey: string;
  [k: string]: unknown;
}

export class ReplayBatchError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'ReplayBatchError';
  }
}

/** What every step of a replay run works with; `replayContext` (functions/composition.ts) builds it. */
export interface JobContext {
  readonly config: TidemarkConfig;
  readonly clients: ReplayClients;
  readonly storage: Storage;
  readonly log: Log;
  /** Names a key in log lines by its keyed hash. @default none */
  readonly keyRef?: KeyRef;
  readonly env?: NodeJS.ProcessEnv;
}

export const runPrefix = (config: TidemarkConfig, runId: string) => jobRunPrefix(config.replay.jobsPrefix, 'replay', runId);

const manifests = new Map<string, ReplayManifest>();

async function manifestOf(ctx: JobContext, manifestKey: string): Promise<ReplayManifest> {
  const cached = manifests.get(manifestKey);
  if (cached) return cached;
  const m = await getJson<ReplayManifest>(ctx.clients.s3, ctx.config.raw.bucket, manifestKey);
  manifests.set(manifestKey, m);
  return m;
}

export async function summarizeReplay(ctx: JobContext, input: { manifestKey: string }): Promise<ReplaySummary> {
  const m = await manifestOf(ctx, input.manifestKey);
  const prefix = resultsPrefix(runPrefix(ctx.config, m.runId));
  const tally = emptyTally();
  let done = 0;
  let token: string | undefined;
  do {
    const page = await ctx.clients.s3.send(new ListObjectsV2Command({ Bucket: ctx.config.raw.bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) {
      if (!o.Key) continue;
      const r = await getJson<{ tally: ReplayTally }>(ctx.clients.s3, ctx.config.raw.bucket, o.Key);
      addTally(tally, { ...emptyTally(), ...r.tally });
      done++;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  const summaryKey = runFile(runPrefix(ctx.config, m.runId), 'summary');
  const summary: ReplaySummary = {
    runId: m.runId,
    target: m.request.into,
    tables: m.tables,
    objects: m.objects,
    // A batch is a key bucket the selection wrote to: one result each.
    batches: done,
    batchesDone: done,
    tally,
    summaryKey,
  };
  await putJson(ctx.clients.s3, ctx.config.raw.bucket, summaryKey, summary);
  return summary;
}

/** After a fresh replay: the full diff and the switch-over steps, stored next to the summary. */
export async function verifyFresh(ctx: JobContext, input: { manifestKey: string }): Promise<{ diff: DiffReport | null; steps: string[] }> {
  const m = await manifestOf(ctx, input.manifestKey);
  if (m.target.kind !== 'fresh') return { diff: null, steps: [] };
  const table = ctx.config.tables.find((t) => t.source === m.tables[0]);
  if (!table) throw new ReplayBatchError(`table ${m.tables[0]} is no longer configured`);
  const diff = await diffTables(ctx.clients.dynamodb, table, m.target.target);
  const steps = switchSteps(table, m.target.target, diff, m.target.createdBy ?? m.runId);
  await putJson(ctx.clients.s3, ctx.config.raw.bucket, runFile(runPrefix(ctx.config, m.runId), 'verify'), { diff, steps });
  return { diff, steps };
}
