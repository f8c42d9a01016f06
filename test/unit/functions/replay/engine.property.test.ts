/**
 * The replay engine's central invariant, through the real DynamoWriter on a fake DynamoDB that
 * evaluates the guards: replaying any delivery of a history from raw (records repeated, chunks in
 * any order) converges to the fold of the highest position per key; with an erasure in the ledger,
 * the erased key's changes at or before it never come back while later ones apply; and a second
 * replay of the same raw writes nothing (the pre-read settles every key).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseConfig } from '../../../../lib/config/config.js';
import { Normalizer, type RawRecord } from '../../../../functions/core/normalize.js';
import { DynamoWriter } from '../../../../functions/adapters/dynamo-writer.js';
import { LedgerKeyring, LedgerView } from '../../../../functions/adapters/erase-ledger.js';
import { keyHash } from '../../../../functions/core/key-hash.js';
import { noKeyRef } from '../../../../functions/telemetry/sinks.js';
import { ReplayEngine } from '../../../../functions/replay/engine.js';
import { PgHistory } from '../../../helpers/debezium.js';
import { FakeDynamoDB } from '../../../helpers/fake-dynamodb.js';

const config = parseConfig({
  name: 'prop',
  tables: [{ source: 'public.customers', target: 'prop-customers', key: ['id'], keyTypes: { id: 'number' } }],
  raw: { bucket: 'prop-raw' },
});
const table = config.tables[0];
const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const secret = Buffer.from('property-test-ledger-key-01234');

const op = fc.record({ key: fc.integer({ min: 1, max: 4 }), kind: fc.constantFrom('c', 'u', 'd') as fc.Arbitrary<'c' | 'u' | 'd'>, name: fc.string({ maxLength: 6 }) });

describe('replay engine (property)', () => {
  it('converges to the fold of raw whatever the delivery, honours the ledger, and a second replay writes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 1, maxLength: 25 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.integer({ min: 1, max: 6 }),
        fc.option(fc.record({ key: fc.integer({ min: 1, max: 4 }), at: fc.nat() }), { nil: null }),
        async (ops, duplicates, chunkSize, erasure) => {
          const history = new PgHistory();
          for (const o of ops) history.emit('customers', o.kind, { id: o.key }, o.kind === 'd' ? null : { name: o.name });
          const records: RawRecord[] = history.events.map((e, i) => ({
            value: Buffer.from(e.value),
            key: Buffer.from(e.partitionKey),
            topic: null,
            headers: {},
            transport: { kind: 'kinesis', stream: 's', shard: 'shardId-0', sequence: String(i + 1), partitionKey: e.partitionKey, arrivalTime: 1 },
          }));
          // Redeliveries, then chunks replayed in reverse order.
          const delivered = [...records, ...duplicates.map((d) => records[d % records.length] as RawRecord)];
          const chunks: RawRecord[][] = [];
          for (let i = 0; i < delivered.length; i += chunkSize) chunks.push(delivered.slice(i, i + chunkSize));
          chunks.reverse();

          const erasedEvents = erasure ? history.events.filter((e) => e.key.id === erasure.key) : [];
          const ledgerPos = erasure && erasedEvents.length > 0 ? (erasedEvents[erasure.at % erasedEvents.length]?.position ?? '') : null;
          const ledger =
            erasure && ledgerPos !== null
              ? new LedgerView(LedgerKeyring.parse(secret.toString()), [{ table: 'public.customers', keyHash: keyHash(secret, 'public.customers', `["${erasure.key}"]`), keyId: 'k1', position: ledgerPos, erasedAt: 1, reason: 'p' }])
              : null;
          const fake = new FakeDynamoDB(config.tables);
          const engine = new ReplayEngine({
            normalizer: new Normalizer(config),
            dynamodb: fake.client,
            writer: new DynamoWriter({ client: fake.client, tables: config.tables, maxItemBytes: 350_000 }),
            tables: new Map([['public.customers', table as (typeof config.tables)[number]]]),
            watermarks: null,
            ledger,
            log: quiet,
            keyRef: noKeyRef,
            concurrency: 4,
          });
          for (const chunk of chunks) {
            const r = await engine.replay(chunk, { tables: ['public.customers'] });
            assert.deepEqual(r.failures, []);
          }
          // Expected: per key, the highest-position event not blocked by the ledger.
          const expected = new Map<number, { position: string; row: unknown }>();
          for (const e of history.events) {
            const id = e.key.id as number;
            if (ledger && erasure?.key === id && ledgerPos !== null && e.position <= ledgerPos) continue;
            const prev = expected.get(id);
            if (!prev || prev.position < e.position) expected.set(id, { position: e.position, row: e.after });
          }
          for (let id = 1; id <= 4; id++) {
            const item = fake.get('prop-customers', { id: { N: String(id) } });
            const want = expected.get(id);
            if (!want) {
              assert.equal(item, undefined, `key ${id} must not exist`);
              continue;
            }
            assert.equal(item?.__pos?.S, want.position, `key ${id} position`);
            if (want.row === null) assert.equal(item?.__deleted?.BOOL, true, `key ${id} is a tombstone`);
            else assert.equal(item?.name?.S, (want.row as { name: string }).name, `key ${id} row`);
          }
          const again = await engine.replay(records, { tables: ['public.customers'] });
          assert.equal(again.tally.writeRequests, 0);
          assert.equal(again.tally.writeUnits, 0);
        },
      ),
      { numRuns: 60 },
    );
  });
});
