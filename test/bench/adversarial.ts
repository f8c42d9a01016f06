/**
 * The worst case per input byte (issue 20, item 1): records built to make a reader slow (long runs
 * of digits and zeros, blanks, huge exponents, absurdly wide rows) go through the same Normalizer
 * as every record, and the bench prints the µs each costs per byte. Linear readers keep it flat
 * whatever the size; a quadratic one grows with the record (40,000 digits once took 14 s).
 *
 *   node --import tsx test/bench/adversarial.ts
 */
import { fileURLToPath } from 'node:url';
import { Normalizer, type RawRecord } from '../../functions/core/normalize.js';
import { parseConfig } from '../../lib/config/config.js';

const config = parseConfig({
  name: 'bench',
  tables: [{ source: 'public.t', target: 'bench-t', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'bench-raw' },
});

const source = { version: '2.7.0.Final', connector: 'postgresql', name: 'pg', ts_ms: 1_735_732_800_000, snapshot: 'false', db: 'd', schema: 'public', table: 't', txId: 1, lsn: 100, sequence: '["90","100"]' };
const envelope = (after: string, src: Record<string, unknown> = source) => `{"before":null,"after":${after},"source":${JSON.stringify(src)},"op":"c","ts_ms":1735732800000}`;

/** One adversarial record per kind, at a size of about `n` characters of the hostile part. */
function kinds(n: number): [string, string][] {
  const wide = Array.from({ length: Math.floor(n / 12) }, (_, i) => `"c${i}":${i}`).join(',');
  return [
    ['digits 1 0…0 1 in a value', envelope(`{"id":1,"v":1${'0'.repeat(n)}1}`)],
    ['digit run in the LSN', envelope('{"id":1}', { ...source, sequence: `["1","${'7'.repeat(n)}"]` })],
    ['exponent of n digits', envelope(`{"id":1,"v":1e${'9'.repeat(n)}}`)],
    ['blanks around a number', envelope(`{"id":1,"v":${' '.repeat(n)}1${' '.repeat(n)}}`)],
    ['wide row', envelope(`{"id":1,${wide}}`)],
  ];
}

const record = (text: string): RawRecord => ({
  value: Buffer.from(text),
  key: null,
  topic: null,
  headers: {},
  transport: { kind: 'kinesis', stream: 's', shard: 'shardId-000000000000', sequence: '1', partitionKey: null, arrivalTime: 1 },
});

export interface AdversarialFigure {
  readonly kind: string;
  readonly bytes: number;
  readonly microsPerByte: number;
  readonly outcome: string;
}

/** Each kind at each size, best of `rounds` runs (the record is normalized whole each time). */
export function measureAdversarial(sizes: readonly number[] = [10_000, 100_000, 1_000_000], rounds = 3): AdversarialFigure[] {
  const normalizer = new Normalizer(config);
  const out: AdversarialFigure[] = [];
  for (const n of sizes) {
    for (const [kind, text] of kinds(n)) {
      const rec = record(text);
      let best = Number.POSITIVE_INFINITY;
      let outcome = '';
      for (let r = 0; r < rounds; r++) {
        const started = process.hrtime.bigint();
        const result = normalizer.normalize(rec);
        best = Math.min(best, Number(process.hrtime.bigint() - started) / 1000);
        outcome = result.ok ? 'accepted' : result.reason;
      }
      out.push({ kind, bytes: rec.value?.length ?? 0, microsPerByte: best / Math.max(1, rec.value?.length ?? 0), outcome });
    }
  }
  return out;
}

export function adversarialTable(figures: readonly AdversarialFigure[]): string[] {
  const lines = [`${'kind'.padEnd(28)}${'bytes'.padStart(11)}${'µs/byte'.padStart(10)}  outcome`];
  for (const f of figures) lines.push(`${f.kind.padEnd(28)}${String(f.bytes).padStart(11)}${f.microsPerByte.toFixed(4).padStart(10)}  ${f.outcome}`);
  const worst = Math.max(...figures.map((f) => f.microsPerByte));
  lines.push(`worst case: ${worst.toFixed(4)} µs per input byte`);
  return lines;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) for (const line of adversarialTable(measureAdversarial())) console.log(line);
