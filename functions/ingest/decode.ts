/**
 * Step 1 of a batch: decode and normalize every record, and build its raw (or quarantine) lines.
 * Nothing here throws for bad input: a record that cannot be decoded is quarantined with its reason
 * and counted under its table when the table is known and configured, else under `*`.
 *
 * Multi-row records: each row becomes one raw line, and only the record's first line in an object
 * carries the message (see `RawLine.messageRef`), so memory stays proportional to the input.
 */
import type { TidemarkConfig } from '../config/types.js';
import { UNKNOWN_TABLE } from '../telemetry/contract.js';
import type { Normalizer, RawRecord, RecordTexts } from '../core/normalize.js';
import type { ChangeEvent, ControlEvent, NormalizedEvent } from '../core/types.js';
import type { QuarantineLine, RawLine } from '../adapters/raw-store.js';
import type { Log } from '../telemetry/sinks.js';
import { type LineIdentity, quarantineLineFor, rawLineFor, recordPart } from './raw-lines.js';
import { contentHash, type KnownIdentity } from '../core/plan.js';
import { encodePosition } from '../core/position.js';
import type { BatchTally } from './tally.js';

export interface Decoded {
  /** Change events, in delivery order. */
  readonly changes: readonly ChangeEvent[];
  /** Control events (transaction markers, schema changes, …), in delivery order. */
  readonly controls: readonly ControlEvent[];
  /** The lines of the batch's raw object: every table's changes and the control messages, in delivery order. */
  readonly lines: readonly RawLine[];
  readonly quarantined: readonly QuarantineLine[];
  /** The delivered records that carried the given change events (indexes into `changes`). */
  recordsOf(changeIndexes: readonly number[]): number[];
  /** Key id and content hash of each change (by index into `changes`), computed once for the raw lines. */
  readonly identity: KnownIdentity;
}

export interface DecodeDeps {
  readonly config: TidemarkConfig;
  readonly normalizer: Normalizer;
  readonly log: Log;
}

export function decode(records: readonly RawRecord[], deps: DecodeDeps, tally: BatchTally): Decoded {
  const configured = new Set(deps.config.tables.map((t) => t.source));
  const known = (table: string | null | undefined): string => (table && configured.has(table) ? table : UNKNOWN_TABLE);
  const changes: ChangeEvent[] = [];
  const controls: ControlEvent[] = [];
  const recordOfChange: number[] = [];
  const lines = new RawLineCollector(deps.normalizer);
  const quarantined: QuarantineLine[] = [];

  records.forEach((record, index) => {
    const result = deps.normalizer.normalize(record);
    if (!result.ok) {
      const table = known(result.table);
      quarantined.push(quarantineLineFor(record, result, table === UNKNOWN_TABLE ? null : table));
      tally.count(table, 'received');
      tally.count(table, 'quarantined');
      // The detail may quote a field of the message (to 60 characters): it stays in the quarantine
      // object, which erase reaches, and reaches the log only with debug logging on.
      deps.log.warn('record quarantined', { reason: result.reason, table, shard: record.transport.shard, sequence: record.transport.sequence });
      deps.log.debug('quarantine detail', { reason: result.reason, detail: result.detail, shard: record.transport.shard, sequence: record.transport.sequence });
      return;
    }
    // Accepted with nothing to apply: still landed in raw and counted once, as a control message.
    const events = result.events.length > 0 ? result.events : [emptyControl(result.format)];
    lines.addRecord(record, events, result.texts);
    for (const e of events) {
      tally.summary.events++;
      if (e.kind === 'control') {
        noteControl(tally, known(e.table), e);
        controls.push(e);
        continue;
      }
      changes.push(e);
      recordOfChange.push(index);
      noteChange(tally, e);
    }
  });

  return {
    changes,
    controls,
    lines: lines.lines,
    quarantined,
    identity: { keyId: (i) => lines.keyIds[i], hash: (i) => lines.hashes[i] },
    recordsOf: (changeIndexes) => [...new Set(changeIndexes.map((i) => recordOfChange[i] ?? -1).filter((i) => i >= 0))],
  };
}

const emptyControl = (format: string): NormalizedEvent => ({ kind: 'control', format, control: 'control', table: null, position: null, txid: null, commitTs: null, detail: {} });

function noteControl(tally: BatchTally, table: string, e: NormalizedEvent & { kind: 'control' }): void {
  tally.count(table, 'received');
  tally.count(table, 'controls');
  if (e.control === 'resolved' && typeof e.detail.resolved === 'string') tally.table(table).resolved = e.detail.resolved;
  // Schema changes: the last DDL per table goes to its status row (the start of drift reporting).
  if (e.control === 'schema' && e.table !== null && typeof e.detail.ddl === 'string') tally.table(e.table).lastDdl = e.detail.ddl;
}

export function noteChange(tally: BatchTally, e: ChangeEvent): void {
  tally.count(e.table, 'received');
  const t = tally.table(e.table);
  t.strengths.add(e.position.strength);
  t.formats.add(e.format);
  if (!e.snapshot) t.snapshotOnly = false;
  else t.noteSnapshotRead(encodePosition(e.position.tuple));
}

/**
 * The lines of the batch's one raw object; a record's later lines reference its first. Each
 * change's key id and content hash are computed here once, and planBatch reuses them.
 */
class RawLineCollector {
  readonly lines: RawLine[] = [];
  readonly keyIds: string[] = [];
  readonly hashes: string[] = [];

  constructor(private readonly normalizer: Pick<Normalizer, 'keyIdOf'>) {}

  addRecord(record: RawRecord, events: readonly NormalizedEvent[], texts: RecordTexts): void {
    const part = recordPart(record, texts);
    events.forEach((e, i) => {
      let identity: LineIdentity | null = null;
      if (e.kind === 'change') {
        identity = { keyId: this.normalizer.keyIdOf(e), hash: contentHash(e) };
        this.keyIds.push(identity.keyId);
        this.hashes.push(identity.hash);
      }
      this.lines.push(rawLineFor(part, e, i === 0, identity));
    });
  }
}
