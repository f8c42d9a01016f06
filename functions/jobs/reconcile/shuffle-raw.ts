/**
 * Step 2 of reconcile (map side, raw): read one item's raw objects, fold each key's lines into one
 * record (settled winner, its content hash, highest position, the chain a repair needs) and write
 * the records to the shuffle partitions. Memory is bounded: after `maxKeysInMemory` keys the
 * records are flushed; the reduce side merges partial records of the same key.
 */
import { isJsonObject, parseJson, stringifyJson } from '../../core/json.js';
import { keyId } from '../../core/keys.js';
import type { Normalized } from '../../core/normalize.js';
import { contentHash } from '../../core/plan.js';
import { encodePosition } from '../../core/position.js';
import type { ChangeEvent } from '../../core/types.js';
import type { RawLineInfo, RawReplayRecord } from '../../adapters/raw-reader.js';
import { type JobDeps, tableConfig } from '../deps.js';
import { type ObjectRef, readParsed } from '../raw-scan.js';
import { getJson, PartitionWriter, putJson } from '../shuffle.js';
import { rawItemKey } from './plan.js';
import type { RawItem, RawKeyFold, RawSideRecord, TaskInput } from './types.js';

export interface ShuffleStats {
  readonly rawObjects: number;
  readonly rawEvents: number;
  /** Lines whose message no longer normalizes to the line's key and position (content unknown). */
  readonly unmatched: number;
  /** Unreadable raw lines (see raw-reader.ts), counted, never skipped silently. */
  readonly problems: number;
  readonly records: number;
}

/** A key's fold of this task's raw lines, with how many lines it saw. */
interface KeyState extends RawKeyFold {
  n: number;
}

/** The change event a raw line was written for, re-normalized from its message. */
export function eventOfLine(result: Normalized | null, line: RawLineInfo): ChangeEvent | undefined {
  if (!result?.ok) return undefined;
  for (const e of result.events) {
    if (e.kind !== 'change' || e.table !== line.table) continue;
    if (encodePosition(e.position.tuple) === line.position && stringifyJson(e.key) === line.key) return e;
  }
  return undefined;
}

/** A full row or a delete: what a chain of events for a key can start from. */
export const isFullImage = (e: ChangeEvent): boolean => e.op === 'd' || (e.patch === null && e.placeholders.length === 0);

export const statsKey = (prefix: string, task: string): string => `${prefix}stats/${task}.json`;

/** A change line of a wanted table with its key and position. */
type KeyedLine = RawLineInfo & { readonly table: string; readonly key: string; readonly position: string };

const isKeyedChange = (line: RawLineInfo, wanted: ReadonlySet<string>): line is KeyedLine =>
  line.kind === 'change' && line.op !== 't' && line.table !== null && wanted.has(line.table) && line.key !== null && line.position !== null;

/** Where a raw line sits: object, record index, line index. */
interface LineRef {
  readonly object: string;
  readonly i: number;
  readonly j: number;
}

/** Folds a settled line into its key's record: the winner (and conflicts at its position) and the repair chain. */
function foldSettled(s: KeyState, line: KeyedLine, event: ChangeEvent | undefined, ref: LineRef): void {
  const hash = event ? contentHash(event) : null;
  const op = line.op ?? '';
  if (!s.w || line.position > s.w.p) s.w = { p: line.position, o: op, h: hash, x: false };
  else if (line.position === s.w.p && hash !== null && s.w.h !== null && hash !== s.w.h) s.w.x = true;
  const full = event ? isFullImage(event) : false;
  s.c.push({ p: line.position, o: ref.object, i: ref.i, j: ref.j, f: full });
  // Events older than a full image or delete cannot contribute to the key's state.
  const anchor = line.position;
  if (full && s.c.some((c) => c.p < anchor)) s.c = s.c.filter((c) => c.p >= anchor);
}

/** The per-key records of one raw item, bounded in memory, and the counters of the fold. */
class RawFold {
  readonly states = new Map<string, KeyState>();
  rawEvents = 0;
  unmatched = 0;
  problems = 0;
  private readonly wanted: ReadonlySet<string>;

  constructor(
    private readonly deps: JobDeps,
    tables: readonly string[],
  ) {
    this.wanted = new Set(tables);
  }

  private stateOf(line: KeyedLine): KeyState {
    const table = tableConfig(this.deps.config, line.table);
    const key = parseJson(line.key);
    const id = isJsonObject(key) ? keyId(table, key) : line.key;
    const stateKey = `${line.table}\u0000${id}`;
    let s = this.states.get(stateKey);
    if (!s) {
      s = { t: line.table, k: id, key: line.key, w: null, m: '', c: [], n: 0 };
      this.states.set(stateKey, s);
    }
    return s;
  }

  /** One delivered record's lines; only settled objects (stored before the cutoff) name winners. */
  addRecord(rec: RawReplayRecord, ref: { object: string; i: number }, settled: boolean): void {
    let result: Normalized | null = null;
    for (const [j, line] of rec.lines.entries()) {
      if (!isKeyedChange(line, this.wanted)) continue;
      this.rawEvents++;
      const s = this.stateOf(line);
      s.n++;
      if (line.position > s.m) s.m = line.position;
      if (!settled) continue;
      result ??= this.deps.normalizer.normalize(rec.record);
      const event = eventOfLine(result, line);
      if (!event) this.unmatched++;
      foldSettled(s, line, event, { ...ref, j });
    }
  }
}

export async function shuffleRaw(input: TaskInput<RawItem>, deps: JobDeps): Promise<ShuffleStats> {
  const { run, item } = input;
  const bucket = deps.config.raw.bucket;
  const taskId = `raw-${String(item.index).padStart(5, '0')}`;
  const objects = await getJson<ObjectRef[]>(deps.s3, bucket, rawItemKey(run, item.index));
  const writer = new PartitionWriter<RawSideRecord>(deps.s3, bucket, run.prefix, run.partitions, taskId);
  const fold = new RawFold(deps, run.tables);

  const emit = async () => {
    for (const s of fold.states.values()) writer.add(s.t, s.k, { s: 'r', ...s });
    fold.states.clear();
    await writer.flush();
  };

  for (const object of objects) {
    const settled = object.lastModified <= run.cutoff;
    const parsed = await readParsed(deps.s3, bucket, object.key);
    fold.problems += parsed.problems.length;
    for (const [i, rec] of parsed.records.entries()) fold.addRecord(rec, { object: object.key, i }, settled);
    if (fold.states.size >= deps.config.jobs.reconcile.maxKeysInMemory) await emit();
  }
  await emit();
  const stats: ShuffleStats = { rawObjects: objects.length, rawEvents: fold.rawEvents, unmatched: fold.unmatched, problems: fold.problems, records: writer.recordsWritten };
  await putJson(deps.s3, bucket, statsKey(run.prefix, taskId), stats);
  deps.log.info('reconcile raw shuffled', { runId: run.runId, item: item.index, ...stats });
  return stats;
}
