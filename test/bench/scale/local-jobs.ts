/**
 * The jobs of a local full reconcile, through the embedded engine (bin/local/duckdb-engine.ts) and
 * the statements of functions/sql: every hour `compact-hour` then `fold-expected`, and after each
 * checkpoint hour `reconcile-full` (its counts read as a stream, its findings unloaded to the
 * bucket). Resident memory is sampled every 25 ms and kept per phase; on Linux the kernel's own
 * high-water mark (VmHWM) is read at the end.
 *
 *   const r = await runJobs(engine, { hours, checkpoints, tables }, log);
 *   r.peakRss          // bytes, the whole run
 *   r.reconciles[0]    // { runId, counts: { ok: …, missing: … }, seconds, peakRss }
 */
import { readFileSync } from 'node:fs';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { encodeSegment } from '../../../functions/adapters/raw-layout.js';
import type { Endpoints } from '../../../bin/local/clients.js';
import type { DuckDbEngine } from '../../../bin/local/duckdb-engine.js';
import type { StoreLayout } from '../../../bin/local/duckdb-store.js';
import { buildStatements } from '../../../functions/sql/index.js';

export interface JobsPlan {
  readonly hours: readonly number[];
  readonly checkpoints: readonly { readonly runId: string; readonly afterHour: number; readonly cutoff: number }[];
  readonly tables: readonly string[];
  /** Where reconcile-full unloads its findings: `s3://bucket/prefix/`. */
  readonly findingsRoot: string;
  /** Objects and bytes under a prefix of the bucket: what each reconcile read, measured when it ran. */
  readonly usage?: (prefix: string) => Promise<Usage>;
  /** The layout's prefixes, for `usage`. */
  readonly layout?: StoreLayout;
}

export interface Usage {
  readonly objects: number;
  readonly bytes: number;
}

/** The inputs of a reconcile when it ran: what reconcile-full reads (expected state, the run's table side) and what it does not (history, raw). */
export interface ReconcileInputs {
  readonly expectedState: Usage;
  readonly tableSide: Usage;
  readonly history: Usage;
  readonly raw: Usage;
}

/** What the measured child process (local-reconcile-child.ts) reads on stdin: where S3 is, the layout, the plan. */
export interface ChildInput {
  readonly endpoints: Endpoints;
  readonly layout: StoreLayout;
  readonly memoryLimit: string;
  readonly hours: readonly number[];
  readonly checkpoints: readonly { runId: string; afterHour: number; cutoff: number }[];
  readonly tables: readonly string[];
}

/** The child's result line on stdout starts with this. */
export const RESULT_MARK = 'SCALE-RESULT ';

export interface ReconcileRun {
  readonly runId: string;
  readonly afterHour: number;
  /** Keys per class, all tables. */
  readonly counts: Readonly<Record<string, number>>;
  readonly findings: number;
  readonly seconds: number;
  readonly peakRss: number;
  readonly inputs: ReconcileInputs | null;
}

export interface JobsResult {
  readonly compactSeconds: number;
  readonly foldSeconds: number;
  readonly compactedRows: number;
  readonly compactPeakRss: number;
  readonly reconciles: readonly ReconcileRun[];
  /** Highest sampled RSS of the run, and the kernel's peak (VmHWM) when it can be read. */
  readonly peakRss: number;
  readonly kernelPeakRss: number | null;
  readonly seconds: number;
}

/** Samples `process.memoryUsage.rss()`: the highest value since the last `take`, and overall. */
export class RssSampler {
  private phase = 0;
  private all = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(intervalMs = 25) {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  private sample(): void {
    const rss = process.memoryUsage.rss();
    this.phase = Math.max(this.phase, rss);
    this.all = Math.max(this.all, rss);
  }

  /** The peak since the previous call. */
  take(): number {
    this.sample();
    const p = this.phase;
    this.phase = 0;
    return p;
  }

  stop(): number {
    clearInterval(this.timer);
    this.sample();
    return this.all;
  }
}

/** The kernel's peak resident set of this process (Linux `VmHWM`), bytes; null elsewhere. */
export function kernelPeakRss(): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

const one = <T>(xs: readonly T[]): T => {
  const x = xs[0];
  if (x === undefined || xs.length !== 1) throw new Error('expected exactly one statement');
  return x;
};

async function measureInputs(plan: JobsPlan, runId: string): Promise<ReconcileInputs | null> {
  const { usage, layout } = plan;
  if (!usage || !layout) return null;
  return {
    expectedState: await usage(`${layout.warehousePrefix}expected_state/`),
    tableSide: await usage(`${layout.tableSidePrefix}run_id=${encodeSegment(runId)}/`),
    history: await usage(`${layout.warehousePrefix}history/`),
    raw: await usage(layout.rawPrefix),
  };
}

/** `usage` over S3: ListObjectsV2 pages summed. */
export function s3Usage(s3: S3Client, bucket: string): (prefix: string) => Promise<Usage> {
  return async (prefix) => {
    let objects = 0;
    let bytes = 0;
    let token: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
      for (const o of page.Contents ?? []) {
        objects++;
        bytes += o.Size ?? 0;
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return { objects, bytes };
  };
}

export async function runJobs(engine: DuckDbEngine, plan: JobsPlan, log: (line: string) => void = () => {}): Promise<JobsResult> {
  const started = performance.now();
  const rss = new RssSampler();
  let compactMs = 0;
  let foldMs = 0;
  let compacted = 0;
  let compactPeak = 0;
  const reconciles: ReconcileRun[] = [];
  try {
    for (const [i, hour] of plan.hours.entries()) {
      let t = performance.now();
      compacted += (await engine.run(one(buildStatements('compact-hour', { hour })))).rows;
      compactMs += performance.now() - t;
      t = performance.now();
      await engine.runAll(buildStatements('fold-expected', { hour }));
      foldMs += performance.now() - t;
      compactPeak = Math.max(compactPeak, rss.take());
      log(`hour ${i + 1}/${plan.hours.length} compacted and folded (${compacted} lines so far)`);
      for (const c of plan.checkpoints.filter((x) => x.afterHour === i)) {
        const t0 = performance.now();
        const args = { tables: plan.tables, runId: c.runId, cutoff: c.cutoff } as const;
        const counts: Record<string, number> = {};
        for await (const row of engine.query(one(buildStatements('reconcile-full', { ...args, part: 'counts' })))) {
          const k = String(row.class);
          counts[k] = (counts[k] ?? 0) + Number(row.keys);
        }
        const unloaded = await engine.run(one(buildStatements('reconcile-full', { ...args, part: 'findings', output: `${plan.findingsRoot}${c.runId}/` })));
        const seconds = (performance.now() - t0) / 1000;
        const peakRss = rss.take();
        const inputs = await measureInputs(plan, c.runId);
        reconciles.push({ runId: c.runId, afterHour: i, counts, findings: unloaded.rows, seconds, peakRss, inputs });
        log(`reconcile ${c.runId}: ${JSON.stringify(counts)}`);
      }
    }
  } finally {
    rss.stop();
  }
  return {
    compactSeconds: compactMs / 1000,
    foldSeconds: foldMs / 1000,
    compactedRows: compacted,
    compactPeakRss: compactPeak,
    reconciles,
    peakRss: rss.stop(),
    kernelPeakRss: kernelPeakRss(),
    seconds: (performance.now() - started) / 1000,
  };
}
