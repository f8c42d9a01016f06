/**
 * The Glue table over raw matches what the runtime writes, both ways, with compatible types; and
 * every Athena example in docs/deploy.md only names columns, partitions and struct fields that
 * the Glue table has.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../lib/config/config.js';
import { Normalizer } from '../../../functions/core/normalize.js';
import { rawLineFor, recordPart } from '../../../functions/ingest/raw-lines.js';
import { PACKAGE_ROOT } from '../../../lib/defaults.js';
import { RAW_COLUMNS, RAW_PARTITION_KEYS } from '../../../lib/history.js';
import { RAW_LINES } from '../../../functions/sql/schemas.js';

const config = parseConfig(JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'tidemark.config.json'), 'utf8')));

/**
 * The raw lines the runtime builds from a Debezium PostgreSQL update (this repository's plan
 * fixture, line 2), delivered over Kafka with headers: as delivered, with a binary key and value
 * (base64 fields), and as a later line of a multi-row record (`messageRef`).
 */
function runtimeRawLines(): Record<string, unknown>[] {
  const message = readFileSync(path.join(PACKAGE_ROOT, 'test', 'fixtures', 'plan', 'mixed.jsonl'), 'utf8').split('\n')[1] ?? '';
  const record = {
    value: Buffer.from(message),
    key: Buffer.from('{"id":1}'),
    topic: 'shop.public.customers',
    headers: { 'content-type': 'application/json' },
    transport: { kind: 'kafka' as const, stream: 'shop.public.customers', shard: '0', sequence: '42', partitionKey: null, arrivalTime: 1_735_732_801_200 },
  };
  const result = new Normalizer(config).normalize(record);
  assert.ok(result.ok, result.ok ? '' : `${result.reason}: ${result.detail}`);
  const [event] = result.events;
  assert.ok(event);
  const binary = { ...record, key: Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x41]), value: Buffer.from([0xc3, 0x28]) };
  const lines = [rawLineFor(recordPart(record), event, true), rawLineFor(recordPart(binary), event, true), rawLineFor(recordPart(record), event, false)];
  return lines.map((l) => JSON.parse(JSON.stringify(l)) as Record<string, unknown>);
}

/** Whether a JSON value fits a Glue/Hive type as the OpenX JSON SerDe reads it (null fits all). */
function fits(value: unknown, type: string): boolean {
  if (value === null) return true;
  if (type === 'string') return typeof value === 'string';
  if (type === 'bigint' || type === 'int') return Number.isInteger(value);
  if (type === 'boolean') return typeof value === 'boolean';
  const map = /^map<string,(\w+)>$/.exec(type);
  if (map) return typeof value === 'object' && Object.values(value as object).every((v) => fits(v, map[1] ?? ''));
  const struct = /^struct<(.*)>$/.exec(type);
  if (struct) {
    const fields = (struct[1] ?? '').split(',').map((f) => f.split(':') as [string, string]);
    const obj = value as Record<string, unknown>;
    return (
      typeof value === 'object' &&
      fields.every(([name, t]) => fits(obj[name] ?? null, t)) &&
      Object.keys(obj).every((k) => fields.some(([name]) => name === k))
    );
  }
  return false;
}

describe('the Glue table over raw', () => {
  const lines = runtimeRawLines();

  /** The line's field each Glue column reads (the SerDe maps snake_case columns to camelCase fields). */
  const fieldOf = new Map<string, string>(RAW_LINES.columns.map((c) => [c.name, 'field' in c && c.field !== undefined ? c.field : c.name]));

  it('has one column per field of a raw line, and no column the runtime does not write', () => {
    const fields = new Set(lines.flatMap((l) => Object.keys(l)));
    assert.deepEqual([...fields].sort(), RAW_COLUMNS.map((c) => fieldOf.get(c.name)).sort());
  });

  it('types every column so the JSON SerDe reads the runtime’s values', () => {
    for (const line of lines) {
      for (const column of RAW_COLUMNS) {
        const value = line[fieldOf.get(column.name) ?? ''] ?? null;
        assert.ok(fits(value, column.type ?? ''), `${column.name}: ${JSON.stringify(value)} is not ${column.type}`);
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------

const SQL_WORDS = new Set(
  'select from where and or not as between order by group having count sum min max distinct limit desc asc in is null like on case when then else end cast varchar bigint json_extract json_extract_scalar from_unixtime date_trunc'.split(' '),
);

/** Problems of one SQL example: names that are neither SQL, the table, aliases, columns, partitions nor struct fields. */
function sqlProblems(sql: string, database: string): string[] {
  const problems: string[] = [];
  const columns = new Map(RAW_COLUMNS.map((c) => [c.name.toLowerCase(), c.type ?? '']));
  const partitions = new Set<string>(RAW_PARTITION_KEYS);
  let text = sql.replace(/--[^\n]*/g, ' ').replace(/'(?:[^']|'')*'/g, "''");
  for (const m of text.matchAll(/"([^"]+)"/g)) {
    if (!columns.has((m[1] ?? '').toLowerCase())) problems.push(`quoted "${m[1]}" is not a column`);
  }
  text = text.replace(/"[^"]+"/g, ' ');
  const from = /\bFROM\s+([a-z0-9_]+)\.([a-z0-9_]+)/i.exec(text);
  if (from?.[1] !== database || from?.[2] !== 'raw_lines') problems.push(`reads ${from?.[1]}.${from?.[2]}, not ${database}.raw_lines`);
  text = text.replace(/\bFROM\s+[a-z0-9_]+\.[a-z0-9_]+/i, ' ');
  const aliases = new Set([...text.matchAll(/\bAS\s+([a-z_][a-z0-9_]*)/gi)].map((m) => (m[1] ?? '').toLowerCase()));
  for (const m of text.matchAll(/\b([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)/gi)) {
    const type = columns.get((m[1] ?? '').toLowerCase()) ?? '';
    if (!new RegExp(`[<,]${m[2]}:`).test(type)) problems.push(`${m[1]}.${m[2]} is not a struct field`);
  }
  text = text.replace(/\b[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*/gi, ' ');
  for (const m of text.matchAll(/\b([a-z_][a-z0-9_]*)\b/gi)) {
    const word = (m[1] ?? '').toLowerCase();
    if (SQL_WORDS.has(word) || aliases.has(word) || columns.has(word) || partitions.has(word)) continue;
    problems.push(`"${m[1]}" is not a column, partition, alias or known SQL word`);
  }
  return problems;
}

describe('the Athena examples in docs/deploy.md', () => {
  const doc = readFileSync(path.join(PACKAGE_ROOT, 'docs', 'deploy.md'), 'utf8');
  const examples = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');

  it('exist', () => {
    assert.ok(examples.length >= 3, `${examples.length} examples`);
  });

  it('name only what the Glue table has, and filter on the dt partition and the table', () => {
    for (const sql of examples) {
      assert.deepEqual(sqlProblems(sql, `tidemark_${config.name}`), [], sql);
      assert.match(sql, /\bdt\s*(=|>=|BETWEEN)/, `every query must bound dt (projected partitions):\n${sql}`);
      assert.match(sql, /"table"\s*(=|IS NULL)/, `every query must name the table (every table shares a batch object):\n${sql}`);
    }
  });

  it('the checker catches a misspelt column (it is live)', () => {
    assert.notDeepEqual(sqlProblems("SELECT opp FROM tidemark_shop.raw_lines WHERE dt = 'x'", 'tidemark_shop'), []);
    assert.notDeepEqual(sqlProblems("SELECT transport.shrd FROM tidemark_shop.raw_lines WHERE dt = 'x'", 'tidemark_shop'), []);
  });
});
