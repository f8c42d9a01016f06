/**
 * Step 2 of a batch: land raw (and quarantine) in S3 before anything is applied.
 *
 * S3 errors are retried with exponential backoff for as long as the invocation's remaining time
 * allows (Lambda's `context.getRemainingTimeInMillis()`, else a fixed budget), keeping a reserve to
 * report and return. Only then is the batch failed: nothing is applied, every record is counted
 * `failed`, and the event source retries it (and finally sends the whole records to the on-failure
 * destination). Raw therefore always holds at least what current state holds.
 */
import { setTimeout as sleepFor } from 'node:timers/promises';
import { errorMessage } from '../core/errors.js';
import type { RawRecord } from '../core/normalize.js';
import type { BatchCoordinates, RawStore } from '../adapters/raw-store.js';
import type { Log } from '../telemetry/sinks.js';
import type { Decoded } from './decode.js';
import type { BatchTally } from './tally.js';

/** How long raw landing may keep retrying. */
export interface LandingBudget {
  /** Time left in this invocation (Lambda's `getRemainingTimeInMillis`). */
  readonly remainingTimeMs?: () => number;
  /** Budget when there is no invocation clock (local runs, tests). @default 15000 */
  readonly budgetMs?: number;
  /** Kept free for applying and reporting. @default min(10 s, half the remaining time at the start) */
  readonly reserveMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface LandDeps {
  readonly raw: Pick<RawStore, 'land'>;
  readonly log: Log;
  readonly landing?: LandingBudget;
}

const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 5_000;
const DEFAULT_BUDGET_MS = 15_000;

export function batchCoordinates(records: readonly RawRecord[]): BatchCoordinates {
  const first = records[0]?.transport;
  const last = records[records.length - 1]?.transport;
  return { shard: first?.shard ?? '', firstSequence: first?.sequence ?? '', lastSequence: last?.sequence ?? '', firstArrival: first?.arrivalTime ?? 0 };
}

/** Lands the batch; returns false (after counting every record failed) when it could not. */
export async function land(records: readonly RawRecord[], decoded: Decoded, deps: LandDeps, tally: BatchTally): Promise<boolean> {
  const batch = batchCoordinates(records);
  try {
    const landed = await retryWithinBudget(() => deps.raw.land(batch, decoded.lines, decoded.quarantined), deps.landing ?? {}, (attempt, err, delay) =>
      deps.log.warn('raw landing failed; retrying', { attempt, retryInMs: delay, error: errorMessage(err), shard: batch.shard, firstSequence: batch.firstSequence }),
    );
    tally.summary.s3Puts += landed.objects;
    for (const [table, bytes] of landed.bytesByTable) if (tally.tables.has(table)) tally.count(table, 'rawBytes', bytes);
    return true;
  } catch (err) {
    deps.log.error('raw landing failed; nothing applied, the batch will be retried', { error: errorMessage(err), shard: batch.shard, firstSequence: batch.firstSequence });
    tally.failAll(`raw landing failed: ${errorMessage(err)}`);
    return false;
  }
}

/**
 * Calls `fn` until it succeeds, sleeping 100 ms, 200 ms, … (at most 5 s) between attempts, while
 * the next attempt still fits in the budget. Rethrows the last error once it does not.
 */
export async function retryWithinBudget<T>(fn: () => Promise<T>, budget: LandingBudget, onRetry: (attempt: number, err: unknown, delayMs: number) => void): Promise<T> {
  const sleep = budget.sleep ?? ((ms: number) => sleepFor(ms).then(() => undefined));
  const started = Date.now();
  let slept = 0; // counts too when an injected sleep does not really wait
  const remaining = budget.remainingTimeMs ?? (() => (budget.budgetMs ?? DEFAULT_BUDGET_MS) - Math.max(Date.now() - started, slept));
  const reserve = budget.reserveMs ?? Math.min(10_000, remaining() / 2);
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      const delay = Math.min(MAX_DELAY_MS, FIRST_DELAY_MS * 2 ** (attempt - 1));
      if (remaining() - delay <= reserve) throw err;
      onRetry(attempt, err, delay);
      await sleep(delay);
      slept += delay;
    }
  }
}
