/**
 * The batch step of transactions applied whole (core/transactions.ts decides, adapters/
 * transact-writer.ts sends): after truncates, before the per-key writes.
 *
 * Each unit (a transaction of 2 to `maxItems` rows, complete in the batch) is one TransactWriteItems.
 * Units run in commit order where they share a row (a unit starts once the units before it on each
 * of its rows are done), side by side where they do not, at most `apply.concurrency` at once. A
 * row's writes after the last unit on it are left to the per-key step, which runs after every unit.
 * A write whose earlier write of the same row failed is not sent (its chain starts where the failed
 * one ended): a unit with such a row fails whole, and so does such a per-key write, so the records
 * are retried and the transaction comes back complete.
 *
 * Every unit's writes are counted by the per-key step's accounting (`applyWrites`, through the
 * returned results), so the identity holds in both modes; this step counts the transactions:
 * `txWhole`, and `txIncomplete`, `txTooLarge`, `txUnordered`, `txRefused` for those applied per key.
 */
import type { TidemarkConfig } from '../config/types.js';
import { WriteError } from '../core/errors.js';
import type { BatchPlan, KeyIdentity } from '../core/plan.js';
import { EMPTY_TX_PLAN, type TxFallbackReason, type TxPlan, type TxUnit, planTransactions } from '../core/transactions.js';
import type { WriteResult } from '../adapters/dynamo-writer.js';
import type { TransactWriter, UnitResult } from '../adapters/transact-writer.js';
import type { ChangeEvent } from '../core/types.js';
import type { Counter } from '../telemetry/contract.js';
import type { Log } from '../telemetry/sinks.js';
import type { Decoded } from './decode.js';
import type { BatchTally } from './tally.js';

/** The per-key step's view of what this step settled: results by write index. */
export interface Presettled {
  readonly results: ReadonlyMap<number, WriteResult>;
}

export const NOTHING_PRESETTLED: Presettled = { results: new Map() };

export interface TransactionStepDeps {
  readonly config: Pick<TidemarkConfig, 'transactions'>;
  readonly txWriter: Pick<TransactWriter, 'applyUnit'>;
  readonly concurrency: number;
  readonly log: Log;
}

const FALLBACK_COUNTERS: Readonly<Record<TxFallbackReason, Counter>> = {
  incomplete: 'txIncomplete',
  'too-large': 'txTooLarge',
  unordered: 'txUnordered',
  refused: 'txRefused',
};

/** The batch's transaction plan (nothing without a group). */
export function planBatchTransactions(decoded: Decoded, config: Pick<TidemarkConfig, 'transactions'>, identify: KeyIdentity): TxPlan {
  if (config.transactions.groups.length === 0) return EMPTY_TX_PLAN;
  return planTransactions(decoded.changes, decoded.controls, (i) => decoded.identity.keyId(i) ?? identify(decoded.changes[i] as ChangeEvent), config.transactions);
}

const rowOf = (table: string, keyId: string) => `${table}\u0000${keyId}`;

/**
 * Applies the plan's units; returns the results of their writes (and of writes left blocked by a
 * failed earlier write of their row) for the per-key step to count.
 */
export async function applyTransactionUnits(plan: BatchPlan, txPlan: TxPlan, watermarks: ReadonlyMap<string, string>, deps: TransactionStepDeps, tally: BatchTally): Promise<Presettled> {
  for (const f of txPlan.fallbacks) noteFallback(tally, deps.log, f.table, f.txid, f.reason, f.events);
  for (const s of txPlan.single) tally.count(s.table, 'txWhole');
  if (txPlan.units.length === 0) return NOTHING_PRESETTLED;

  const indexOf = new Map<string, number>();
  const rowWrites = new Map<string, number[]>();
  plan.writes.forEach((w, i) => {
    indexOf.set(`${rowOf(w.table, w.keyId)}\u0000${w.encodedPosition}`, i);
    const row = rowOf(w.table, w.keyId);
    const list = rowWrites.get(row);
    if (list) list.push(i);
    else rowWrites.set(row, [i]);
  });
  const results = new Map<number, WriteResult>();
  const failedRow = (i: number): boolean => results.get(i)?.outcome === 'failed';
  /** The write before write `i` of its row, if any. */
  const previous = (i: number): number | undefined => {
    const w = plan.writes[i];
    const list = w ? rowWrites.get(rowOf(w.table, w.keyId)) : undefined;
    const at = list?.indexOf(i) ?? -1;
    return at > 0 ? list?.[at - 1] : undefined;
  };

  const done = new Map<number, Promise<void>>(); // write index → settled
  const slots = new Semaphore(Math.max(1, deps.concurrency));
  const runs = txPlan.units.map((unit) => {
    const writes = unit.cuts.flatMap((c) => indexOf.get(`${rowOf(c.table, c.keyId)}\u0000${c.position}`) ?? []);
    const before = writes.flatMap((i) => {
      const p = previous(i);
      return p === undefined ? [] : [done.get(p) ?? Promise.resolve()];
    });
    const run = (async () => {
      await Promise.all(before);
      const blocked = writes.some((i) => {
        const p = previous(i);
        return p !== undefined && failedRow(p);
      });
      if (blocked) {
        const error = new WriteError('an earlier write of a row of this transaction failed in this batch; the transaction is retried whole', { context: { table: unit.table } });
        for (const i of writes) results.set(i, failedResult(error));
        return;
      }
      const below = (i: number) => {
        const w = plan.writes[i];
        const wm = w ? watermarks.get(w.table) : undefined;
        return wm !== undefined && w !== undefined && w.encodedPosition < wm;
      };
      for (const i of writes) if (below(i)) results.set(i, { outcome: 'stale', writeUnits: 0, requests: 0, missing: [], spilled: false });
      const send = writes.filter((i) => !below(i));
      if (send.length === 0) return;
      const out = await slots.run(() => deps.txWriter.applyUnit(send.flatMap((i) => plan.writes[i] ?? []), 'auto'));
      send.forEach((i, j) => {
        const r = out.results[j];
        if (r) results.set(i, r);
      });
      countUnit(unit, out, tally, deps.log);
    })();
    for (const i of writes) done.set(i, run);
    return run;
  });
  await Promise.all(runs);

  // The per-key step sends each row's later write; one whose earlier write failed must not go.
  for (const list of rowWrites.values()) {
    const last = list[list.length - 1];
    const prev = last === undefined ? undefined : previous(last);
    if (last !== undefined && !results.has(last) && prev !== undefined && failedRow(prev)) {
      results.set(last, failedResult(new WriteError('an earlier write of this row failed in this batch', { context: { table: plan.writes[last]?.table } })));
    }
  }
  return { results };
}

const failedResult = (error: Error): WriteResult => ({ outcome: 'failed', writeUnits: 0, requests: 0, missing: [], spilled: false, error });

function countUnit(unit: TxUnit, out: UnitResult, tally: BatchTally, log: Log): void {
  tally.summary.dynamoRequests += out.transactRequests + out.readRequests + out.results.reduce((n, r) => n + r.requests, 0);
  tally.count(unit.table, 'readUnits', out.readUnits + out.results.reduce((n, r) => n + (r.readUnits ?? 0), 0));
  if (out.results.some((r) => r.outcome === 'failed')) return;
  if (out.mode === 'transaction') tally.count(unit.table, 'txWhole');
  else noteFallback(tally, log, unit.table, unit.txid, out.reason ?? 'refused', unit.cuts.length);
}

function noteFallback(tally: BatchTally, log: Log, table: string, txid: string, reason: TxFallbackReason, events: number): void {
  tally.count(table, FALLBACK_COUNTERS[reason]);
  log.info('transaction applied per key', { table, txid, reason, events });
}

/** At most `limit` tasks at once, started in the order asked. */
class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    // A finishing task hands its slot to the next waiting one, so no newcomer slips in between.
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
