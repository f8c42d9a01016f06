/**
 * A local full reconcile of a long history with bounded memory. The workload (workload.ts) is landed
 * through `RawStore.land` into the S3 emulator (s3rver, in its own process: the objects never count
 * in the measured memory), then a child process, whose memory is the one measured, runs every
 * hour's `compact-hour` and `fold-expected` and, after the first day and after the last hour,
 * `reconcile-full` against the table side history-load.ts wrote, all through the DuckDB engine.
 *
 * s3rver rather than an in-memory fake: the fake would hold every object in the measured process
 * (a million events are about 350 MB of raw and 250 MB of history), and s3rver moves 40 MB/s here,
 * which a million events need a minute or two of. The stand-in's compact-hour and fold-expected
 * read the whole day of history (docs/history.md, Limits), so the bench gives each day 4 hours.
 *
 *   const r = await localReconcile(target, LOCAL_FULL, log);
 *   r.jobs.kernelPeakRss   // ≤ 1 GiB
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import type { StoreLayout } from '../../../bin/local/duckdb-store.js';
import type { Target } from '../../helpers/target.js';
import { type LoadResult, loadHistory } from './history-load.js';
import { type ChildInput, type JobsResult, RESULT_MARK } from './local-jobs.js';
import { type ScaleWorkloadOptions, tableName } from './workload.js';

export interface LocalOptions extends Omit<ScaleWorkloadOptions, 'start'> {
  /** DuckDB's memory_limit for every statement. @default '512MB' */
  readonly memoryLimit?: string;
  /** The child is killed after this long. @default 60 minutes */
  readonly timeoutMs?: number;
}

/**
 * ≥ 1,000,000 change events and ≥ 200,000 keys, over 5 days of 4 hours, in about 1,000 raw objects of 10
 * tables: 1,000,100 records, of which one in 10,000 is malformed (quarantined, no event).
 */
export const LOCAL_FULL: LocalOptions = { tables: 10, keys: 200_000, events: 1_000_100, batch: 1000, days: 5, hoursPerDay: 4, rowBytes: 300 };
/** `--quick`: a tenth of it. */
export const LOCAL_QUICK: LocalOptions = { tables: 10, keys: 20_000, events: 100_000, batch: 500, days: 5, hoursPerDay: 2, rowBytes: 300 };

export const LIMIT_BYTES = 1024 ** 3;

export interface LocalResult {
  readonly options: LocalOptions;
  readonly load: LoadResult;
  readonly jobs: JobsResult;
  /** Every reconcile found exactly the classes the table side was built with. */
  readonly correct: boolean;
}

const CHILD = fileURLToPath(new URL('./local-reconcile-child.ts', import.meta.url));

function runChild(input: ChildInput, timeoutMs: number, log: (line: string) => void): Promise<JobsResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-warnings', '--import', 'tsx', CHILD], { stdio: ['pipe', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      for (const l of d.toString('utf8').split('\n')) if (l.trim() !== '') log(`  ${l}`);
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith(RESULT_MARK));
      if (code === 0 && line) resolve(JSON.parse(line.slice(RESULT_MARK.length)) as JobsResult);
      else reject(new Error(`the jobs process ended with ${signal ?? `code ${code}`}${signal === 'SIGKILL' ? ` (over ${timeoutMs / 60_000} min)` : ''}`));
    });
    child.stdin.end(JSON.stringify(input));
  });
}

/** Lands the history into the target's S3, then runs the jobs in a child and checks what reconcile found. */
export async function localReconcile(target: Target, o: LocalOptions, log: (line: string) => void): Promise<LocalResult> {
  if (!target.endpoints) throw new Error('the local reconcile needs the embedded emulators');
  const bucket = `scale-local-${Date.now().toString(36)}`;
  await target.clients.s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const layout: StoreLayout = { bucket, rawPrefix: 'raw/', quarantinePrefix: 'quarantine/', warehousePrefix: 'warehouse/', tableSidePrefix: 'reports/table_side/' };
  const perDay = o.hoursPerDay ?? 24;
  const hours = (o.days ?? 1) * perDay;
  const load = await loadHistory(target.clients.s3, layout, { ...o, start: Date.UTC(2026, 10, 1), checkpoints: [perDay - 1, hours - 1], log });
  log(`landed ${load.events.toLocaleString('en-US')} events of ${load.keys.toLocaleString('en-US')} keys in ${load.objects.toLocaleString('en-US')} objects in ${load.seconds.toFixed(0)} s`);
  const jobs = await runChild(
    {
      endpoints: target.endpoints,
      layout,
      memoryLimit: o.memoryLimit ?? '512MB',
      hours: load.hours,
      checkpoints: load.checkpoints.map((c) => ({ runId: c.runId, afterHour: c.afterHour, cutoff: c.cutoff })),
      tables: Array.from({ length: o.tables }, (_, t) => `public.${tableName(t)}`),
    },
    o.timeoutMs ?? 60 * 60_000,
    log,
  );
  const correct = load.checkpoints.every((c) => {
    const got = jobs.reconciles.find((r) => r.runId === c.runId)?.counts ?? {};
    return Object.entries(c.expected).every(([k, v]) => (got[k] ?? 0) === v) && Object.keys(got).every((k) => k in c.expected);
  });
  return { options: o, load, jobs, correct };
}
