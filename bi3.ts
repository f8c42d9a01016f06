import { Normalizer } from './functions/core/normalize.ts';
import { BAD_KINDS, corpusConfig, goodRecords } from './test/corpus/bad-input.ts';
const n = new Normalizer(corpusConfig);
const names = new Set<string>();
let bad = 0;
for (const k of BAD_KINDS) {
  if (names.has(k.family+k.name)) console.log('DUP', k.name); names.add(k.family+k.name);
  const r = n.normalize({ value: k.value, key: k.key ?? null, topic: null, headers: {}, transport: { kind: 'kafka', stream: 't', shard: '0', sequence: '5', partitionKey: null, arrivalTime: 0 } });
  const got = r.ok ? 'OK:' + r.events.map(e => e.kind).join(',') : r.reason;
  if (got !== k.reason) { bad++; console.log(`MISMATCH [${k.family}] ${k.name}: expected ${k.reason}, got ${got} ${r.ok ? '' : r.detail.slice(0, 160)}`); }
}
for (const g of goodRecords(2)) {
  const r = n.normalize({ value: g.value, key: null, topic: null, headers: {}, transport: { kind: 'kafka', stream: 't', shard: '0', sequence: '5', partitionKey: null, arrivalTime: 0 } });
  if (!r.ok) console.log('GOOD FAILS', g.name, r.reason, r.detail.slice(0, 200));
}
console.log('kinds', BAD_KINDS.length, 'mismatches', bad);
