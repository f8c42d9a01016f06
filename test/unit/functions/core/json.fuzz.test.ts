/**
 * Differential fuzz: the two-tier parser and the closure-free canonical form against the first
 * implementations (test/helpers/legacy-json.ts). 300,000 generated texts, a tenth of them mutated
 * into (mostly) invalid JSON, with numbers at every size boundary: 2^53 ± 1, 2^63, 2^64, 38 and 39
 * significant digits, exponents, -0, 1e400, 5e-324. For each text both parsers must throw the same
 * error, or give the same value (types, -0, key order, LosslessNumber text, prototypes); the
 * canonical text must be byte-identical and the short content hash a prefix of the old one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { canonicalJson, isLosslessNumber, LosslessNumber, parseJson } from '../../../../functions/core/json.js';
import { CONTENT_HASH_LENGTH, contentHash } from '../../../../functions/core/plan.js';
import { NO_POSITION } from '../../../../functions/core/position.js';
import type { ChangeEvent, Row } from '../../../../functions/core/types.js';
import { prng } from '../../../../bin/cli/demo-workload.js';
import { legacyCanonicalJson, legacyContentHash, legacyParseJson } from '../../../helpers/legacy-json.js';

const pow = (b: bigint, e: number): bigint => b ** BigInt(e);
const around = (n: bigint): string[] => [n - 1n, n, n + 1n].flatMap((v) => [String(v), String(-v)]);

/** Number tokens at the edges where a double stops holding a value exactly. */
export const BOUNDARY_NUMBERS: readonly string[] = [
  '0',
  '-0',
  '0.0',
  '-0.0',
  '0e0',
  '-0e-0',
  '1',
  '1.0',
  '1.50',
  '0.1',
  '0.30000000000000004',
  ...around(pow(2n, 53)),
  ...around(pow(2n, 63)),
  ...around(pow(2n, 64)),
  ...around(pow(10n, 15)),
  ...around(pow(10n, 16)),
  ...around(pow(10n, 38)),
  '99999999999999999999999999999999999999', // 38 digits
  '999999999999999999999999999999999999999', // 39 digits
  '12345678901234567890123456789.012345678', // 38 significant digits
  '1234567890123456789012345678.90123456789', // 39 significant digits
  '0.12345678901234567890123456789012345678',
  '9007199254740993.0',
  '9007199254740992.0',
  '9007199254740991.5',
  '123456789012345.6',
  '12345678901234.5',
  '1.000000000000000001',
  '1e400',
  '-1e400',
  '1e-400',
  '1E+400',
  '1e308',
  '1.7976931348623157e308',
  '1.7976931348623159e308',
  '5e-324',
  '2e-324',
  '4.9406564584124654e-324',
  '1e21',
  '1e22',
  '1E+2',
  '1e-7',
  '1.5e3',
  '9007199254740993e0',
  '9.007199254740993e15',
  '1234567890123456789e-3',
];

const DIGITS = '0123456789';
const KEYS = ['a', 'b', 'id', 'ts_ns', '__proto__', 'constructor', 'toString', '0', '10', 'é', '\u{1F600}', ''];
const STRING_PIECES = ['x', 'hello', '\\"', '\\\\', '\\n', '\\u00e9', '\\u0000', '\\ud83d\\ude00', '\\ud800', '\\/', '12345678901234567890', ':', ',', '{', ']', 'é', ' '];
const MUTATIONS = ['{', '}', '[', ']', ',', ':', '"', '\\', '-', '0', '1', '9', 'e', 'E', '.', '+', ' ', 't', 'n', '\u0000', '\u00a0'];

function generator(random: () => number) {
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)] as T;
  const digits = (n: number) => {
    let s = '';
    for (let i = 0; i < n; i++) s += DIGITS[int(10)];
    return s;
  };
  const randomNumber = (): string => {
    const len = 1 + int(int(4) === 0 ? 45 : 17);
    let s = (int(3) === 0 ? '-' : '') + (len === 1 || int(8) === 0 ? digits(1) : `${1 + int(9)}${digits(len - 1)}`);
    if (int(3) === 0) s += `.${digits(1 + int(int(3) === 0 ? 30 : 8))}`;
    if (int(5) === 0) s += `${pick(['e', 'E'])}${pick(['', '+', '-'])}${digits(1 + int(3))}`;
    return s;
  };
  const number = (): string => (int(2) === 0 ? pick(BOUNDARY_NUMBERS) : randomNumber());
  const ws = (): string => (int(6) === 0 ? pick([' ', '\n', '\t', '\r', '  ']) : '');
  const string = (): string => {
    let s = '"';
    const n = int(4);
    for (let i = 0; i < n; i++) s += pick(STRING_PIECES);
    return `${s}"`;
  };
  const value = (depth: number): string => {
    const r = int(depth >= 3 ? 5 : 8);
    switch (r) {
      case 0:
      case 1:
        return number();
      case 2:
        return string();
      case 3:
        return pick(['true', 'false', 'null']);
      case 4:
        return number();
      case 5:
      case 6: {
        const n = int(5);
        const parts: string[] = [];
        // Duplicate keys now and then, with equal or different values.
        for (let i = 0; i < n; i++) parts.push(`${ws()}${JSON.stringify(pick(KEYS))}${ws()}:${ws()}${value(depth + 1)}${ws()}`);
        return `{${parts.join(',')}}`;
      }
      default: {
        const n = int(5);
        const parts: string[] = [];
        for (let i = 0; i < n; i++) parts.push(`${ws()}${value(depth + 1)}${ws()}`);
        return `[${parts.join(',')}]`;
      }
    }
  };
  const mutate = (text: string): string => {
    const at = int(text.length + 1);
    switch (int(3)) {
      case 0:
        return text.slice(0, at) + text.slice(at + 1);
      case 1:
        return text.slice(0, at) + pick(MUTATIONS) + text.slice(at);
      default:
        return text.slice(0, at) + pick(MUTATIONS) + text.slice(at + 1);
    }
  };
  return { text: () => `${ws()}${value(0)}${ws()}`, mutate, int };
}

/** An exact description of a parsed value: types, -0, key order, prototypes, number text. */
function describeValue(v: unknown): string {
  if (typeof v === 'number') return Object.is(v, -0) ? 'n-0' : `n${v}`;
  if (typeof v === 'string') return `s${JSON.stringify(v)}`;
  if (v === null || typeof v === 'boolean') return String(v);
  if (isLosslessNumber(v)) return `L${v.value}${Object.getPrototypeOf(v) === LosslessNumber.prototype ? '' : '!proto'}`;
  if (Array.isArray(v)) return `[${v.map(describeValue).join(',')}]`;
  if (typeof v === 'object') {
    const proto = Object.getPrototypeOf(v) === Object.prototype ? '' : '!proto';
    return `{${proto}${Object.keys(v)
      .map((k) => `${JSON.stringify(k)}:${describeValue((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return `?${typeof v}`;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: string };
const attempt = (f: () => unknown): Outcome => {
  try {
    return { ok: true, value: f() };
  } catch (err) {
    return { ok: false, error: `${(err as Error).name}: ${(err as Error).message}` };
  }
};

let lastLegacy: Outcome = { ok: false, error: '' };

/** Checks one text; returns a failure description or null. Leaves the oracle's outcome in `lastLegacy`. */
function check(text: string): string | null {
  const legacy = attempt(() => legacyParseJson(text));
  lastLegacy = legacy;
  const fresh = attempt(() => parseJson(text));
  if (!legacy.ok || !fresh.ok) {
    if (legacy.ok !== fresh.ok) return `one parser threw: legacy ${legacy.ok ? 'ok' : legacy.error}, new ${fresh.ok ? 'ok' : fresh.error}`;
    if (!legacy.ok && !fresh.ok && legacy.error !== fresh.error) return `errors differ: ${legacy.error} / ${fresh.error}`;
    return null;
  }
  const a = describeValue(legacy.value);
  const b = describeValue(fresh.value);
  if (a !== b) return `values differ: ${a} / ${b}`;
  const ca = legacyCanonicalJson(legacy.value);
  const cb = canonicalJson(fresh.value);
  if (ca !== cb) return `canonical differs: ${ca} / ${cb}`;
  return null;
}

const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v) && !isLosslessNumber(v);

const event = (after: unknown, before: unknown, placeholders: string[]): ChangeEvent => ({
  kind: 'change',
  format: 'fuzz',
  op: 'u',
  table: 't',
  key: { id: 1 },
  before: before as Row | null,
  after: after as Row | null,
  patch: null,
  placeholders,
  position: NO_POSITION,
  txid: null,
  commitTs: null,
  snapshot: false,
});

describe('parseJson and canonicalJson against the first implementations', () => {
  it('agree on 300,000 generated texts (10% mutated), boundary numbers included', () => {
    const seed = 20_251_130;
    const gen = generator(prng(seed));
    let parsedObjects = 0;
    let rejected = 0;
    let hashed = 0;
    for (let i = 0; i < 300_000; i++) {
      const base = gen.text();
      const text = i % 10 === 9 ? gen.mutate(base) : base;
      const failure = check(text);
      if (failure !== null) assert.fail(`seed ${seed}, text #${i} ${JSON.stringify(text)}: ${failure}`);
      const parsed = lastLegacy;
      if (!parsed.ok) rejected++;
      if (i % 10 === 0) {
        // Content hash: the new short digest is the prefix of the old one, on parsed values.
        if (parsed.ok && isObject(parsed.value)) {
          const e = event(parsed.value, i % 20 === 0 ? null : parsed.value, i % 3 === 0 ? ['b', 'a'] : []);
          const legacyHash = legacyContentHash(e);
          assert.equal(contentHash(e), legacyHash.slice(0, CONTENT_HASH_LENGTH), `hash of text #${i}`);
          hashed++;
        }
      }
      if (parsed.ok && isObject(parsed.value)) parsedObjects++;
    }
    // The generator must reach both outcomes in quantity, or the comparison proves little.
    assert.ok(rejected > 20_000, `only ${rejected} rejected texts`);
    assert.ok(parsedObjects > 50_000, `only ${parsedObjects} object texts`);
    assert.ok(hashed > 5_000, `only ${hashed} hashed events`);
  });

  it('agree on every boundary number alone, signed, in arrays and as object values', () => {
    for (const n of BOUNDARY_NUMBERS) {
      for (const text of [n, `[${n}]`, `{"v":${n}}`, `{"v":[${n},${n}]}`, `[${n} ]`, `{"v" : ${n} , "w":"\\u0000"}`, `{"${n}":${n}}`, `{${n}:1}`, `[${n}:1]`]) {
        const failure = check(text);
        if (failure !== null) assert.fail(`${JSON.stringify(text)}: ${failure}`);
      }
    }
  });

  it('agree on arbitrary JSON values (fast-check), serialized compactly and with whitespace', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (v, spaced) => {
        const text = JSON.stringify(v, null, spaced ? 2 : undefined) ?? 'null';
        assert.equal(check(text), null);
      }),
      { numRuns: 3_000 },
    );
  });

  it('canonicalJson is byte-identical on values the parser never builds (bigint, undefined, holes, NaN)', () => {
    // biome-ignore lint/suspicious/noSparseArray: a hole is the point of the check
    const values: unknown[] = [10n ** 30n, undefined, [1, , 3], [undefined], { a: undefined }, Number.NaN, -Infinity, 1e21, -0, { b: new LosslessNumber('1e3'), a: new LosslessNumber('-0') }];
    for (const v of values) assert.equal(canonicalJson(v), legacyCanonicalJson(v));
  });
});
