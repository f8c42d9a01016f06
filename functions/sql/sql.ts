/**
 * SQL text as fragments, so a statement is written once and rendered for either engine: literal
 * text, values (bound as `?` where Athena accepts a parameter, inlined as escaped literals
 * elsewhere), and calls into the dialect (dialect.ts) where Trino and DuckDB differ.
 *
 *   const q = sql`SELECT key_id FROM ${table('history')} WHERE source_table = ${bind('public.orders')} AND hr = ${lit(6)}`;
 *   renderSql(q, duckdb)    // { text: 'SELECT key_id FROM history WHERE source_table = ? AND hr = 6', params: ['public.orders'] }
 *
 * Only fragments, values and dialect calls can be interpolated, never a bare string, so nothing a
 * caller passes reaches the text unescaped. Athena takes `?` parameters only in the `WHERE` clauses
 * of SELECT, INSERT, CTAS and UNLOAD (docs/history.md, "SQL"): statements use `bind` there and `lit`
 * everywhere else, and a test checks every `?` of every statement sits in a `WHERE`.
 */
import { TidemarkError } from '../core/errors.js';
import type { Dialect } from './dialect.js';

/** A value a statement carries: text, a finite number, a boolean or null. */
export type SqlValue = string | number | boolean | null;

/** A statement argument that is out of range or malformed: refused before any SQL is built. */
export class SqlArgumentError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'SqlArgumentError';
  }
}

interface Param {
  readonly kind: 'param';
  readonly value: SqlValue;
}

interface DialectCall {
  readonly kind: 'call';
  readonly call: (d: Dialect) => Sql;
}

type Part = string | Param | DialectCall;

/** A piece of SQL text with its values in order. */
export class Sql {
  constructor(readonly parts: readonly Part[]) {}
}

type Interpolation = Sql | Param | DialectCall;

/** Tagged template: SQL text with fragments, values and dialect calls interpolated. */
export function sql(strings: TemplateStringsArray, ...values: readonly Interpolation[]): Sql {
  const parts: Part[] = [];
  strings.forEach((s, i) => {
    if (s !== '') parts.push(s);
    const v = values[i];
    if (v === undefined) return;
    if (v instanceof Sql) parts.push(...v.parts);
    else parts.push(v);
  });
  return new Sql(parts);
}

/** A value bound as a `?` parameter: only inside a WHERE clause of a SELECT, INSERT or UNLOAD. */
export const bind = (value: SqlValue): Param => ({ kind: 'param', value: checked(value) });

/** A call into the dialect, rendered when the statement is rendered for an engine. */
export const call = (fn: (d: Dialect) => Sql): DialectCall => ({ kind: 'call', call: fn });

/** A name from this module's own schemas (never from input): column, alias or keyword text. */
export const raw = (text: string): Sql => new Sql([text]);

/** Fragments joined by a separator. */
export function join(fragments: readonly Sql[], separator = ', '): Sql {
  const parts: Part[] = [];
  fragments.forEach((f, i) => {
    if (i > 0) parts.push(separator);
    parts.push(...f.parts);
  });
  return new Sql(parts);
}

/** `(?, ?, …)`: a non-empty list of bound values. */
export function bindList(values: readonly SqlValue[], what: string): Sql {
  if (values.length === 0) throw new SqlArgumentError(`${what} must not be empty`);
  return sql`(${join(values.map((v) => sql`${bind(v)}`))})`;
}

/** `('a', 'b', …)`: a non-empty list of inlined literals (for MERGE and DELETE, which take no parameters). */
export function litList(values: readonly SqlValue[], what: string): Sql {
  if (values.length === 0) throw new SqlArgumentError(`${what} must not be empty`);
  return sql`(${join(values.map(lit))})`;
}

function checked(value: SqlValue): SqlValue {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new SqlArgumentError(`a SQL value must be a finite number, got ${value}`);
  if (typeof value === 'string') {
    for (let i = 0; i < value.length; i++) {
      if (value.charCodeAt(i) < 0x20) throw new SqlArgumentError('a SQL text value must not hold control characters (U+0000 to U+001F)');
    }
  }
  return value;
}

/**
 * The literal text of a value, the same in Trino and DuckDB: text in single quotes with `'`
 * doubled (neither engine reads backslash escapes in a plain literal), numbers in decimal, booleans
 * and NULL as keywords. This is also the form of an Athena `ExecutionParameters` entry.
 */
export function literal(value: SqlValue): string {
  const v = checked(value);
  if (v === null) return 'NULL';
  if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
  if (typeof v === 'number') return String(v);
  return `'${v.split("'").join("''")}'`;
}

/** A value inlined as its escaped literal. */
export const lit = (value: SqlValue): Sql => new Sql([literal(value)]);

/** A rendered fragment: text with `?` placeholders, and the values they take in order. */
export interface RenderedSql {
  readonly text: string;
  readonly params: readonly SqlValue[];
}

/** Renders a fragment for a dialect. With `inline`, values are written as literals instead of `?`. */
export function renderSql(fragment: Sql, dialect: Dialect, inline = false): RenderedSql {
  let text = '';
  const params: SqlValue[] = [];
  const walk = (f: Sql): void => {
    for (const p of f.parts) {
      if (typeof p === 'string') text += p;
      else if (p.kind === 'param') {
        if (inline) text += literal(p.value);
        else {
          text += '?';
          params.push(p.value);
        }
      } else walk(p.call(dialect));
    }
  };
  walk(fragment);
  return { text, params };
}
