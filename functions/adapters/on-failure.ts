/**
 * The event source mapping's S3 on-failure objects (`aws/lambda/<mapping id>/<shard>/YYYY/MM/DD/…`,
 * ON_FAILURE_PREFIX in raw-layout.ts): Lambda's invocation record of a failed batch, whose
 * `payload` is the whole invocation event as JSON text. Read back by `replay --from-dlq`, and
 * rewritten by erase without the records that carry an erased key.
 *
 *   const event = payloadEvent(doc.payload);            // { source: 'kinesis', event } | { source: 'msk', event } | null
 *   const out = withoutRecords(doc, (r) => carriesKey(r));
 *   out.removed                                         // records dropped
 *   out.doc                                             // the document without them; null when none is left
 */
import type { KinesisStreamEvent, KinesisStreamRecord, MSKEvent } from 'aws-lambda';
import type { RawRecord } from '../core/normalize.js';
import { mskPartitions, recordsFromKinesis } from './records.js';

/** The invocation event an on-failure record's `payload` holds. */
export type PayloadEvent = { readonly source: 'kinesis'; readonly event: KinesisStreamEvent } | { readonly source: 'msk'; readonly event: MSKEvent };

/** The event a `payload` holds (JSON text, or already parsed): Kinesis or MSK, else null. */
export function payloadEvent(payload: unknown): PayloadEvent | null {
  let event: unknown = payload;
  if (typeof payload === 'string') {
    try {
      event = JSON.parse(payload);
    } catch {
      return null;
    }
  }
  if (typeof event !== 'object' || event === null || Array.isArray(event)) return null;
  const e = event as Record<string, unknown>;
  if (Array.isArray(e.Records)) return { source: 'kinesis', event: e as unknown as KinesisStreamEvent };
  if (e.eventSource === 'aws:kafka' || (typeof e.records === 'object' && e.records !== null)) return { source: 'msk', event: e as unknown as MSKEvent };
  return null;
}

export interface WithoutRecords {
  /** The document without the dropped records; null when it held no other record; the input when none was dropped. */
  readonly doc: unknown;
  readonly removed: number;
  readonly kept: number;
}

/**
 * An on-failure document without the records `drop` selects. The rest of the document
 * (requestContext, batch info) is kept as it was; `payload` keeps its form (JSON text or object).
 * A document that is not an on-failure record with a payload is returned unchanged.
 */
export function withoutRecords(doc: unknown, drop: (record: RawRecord) => boolean): WithoutRecords {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return { doc, removed: 0, kept: 0 };
  const d = doc as Record<string, unknown>;
  const event = payloadEvent(d.payload);
  if (event === null) return { doc, removed: 0, kept: 0 };
  let removed = 0;
  let kept = 0;
  let next: unknown;
  if (event.source === 'kinesis') {
    const records: KinesisStreamRecord[] = [];
    for (const r of event.event.Records) {
      const [record] = recordsFromKinesis({ Records: [r] });
      if (record && drop(record)) removed++;
      else {
        records.push(r);
        kept++;
      }
    }
    next = { ...event.event, Records: records };
  } else {
    const partitions: MSKEvent['records'] = {};
    for (const p of mskPartitions(event.event)) {
      const original = event.event.records[p.key] ?? [];
      const left = original.filter((_r, i) => {
        const record = p.records[i];
        const out = record !== undefined && drop(record);
        if (out) removed++;
        else kept++;
        return !out;
      });
      if (left.length > 0) partitions[p.key] = left;
    }
    next = { ...event.event, records: partitions };
  }
  if (removed === 0) return { doc, removed, kept };
  if (kept === 0) return { doc: null, removed, kept };
  return { doc: { ...d, payload: typeof d.payload === 'string' ? JSON.stringify(next) : next }, removed, kept };
}
