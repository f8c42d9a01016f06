/**
 * Each table's recorded schema (core/schema-drift.ts `SchemaState`) as one row of the status table:
 * the table's own partition, row `schema` (telemetry/status-layout.ts), the state as JSON text, a version and a
 * few counts the CLI shows without parsing. Written only when a batch changed the schema, under
 * "the version is still the one read", so two containers that see a change at once never lose
 * each other's: the loser reloads and merges on its next batch.
 *
 *   const store = new SchemaStore(dynamodb, 'shop-status', 'shop');
 *   const known = await store.load(['public.orders']);           // Map: table → { state, version }
 *   await store.save('public.orders', next, known.get('public.orders')?.version ?? 0, Date.now());
 */
import { type AttributeValue, BatchGetItemCommand, ConditionalCheckFailedException, type DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { isSchemaState, type SchemaState } from '../core/schema-drift.js';
import { SCHEMA_ROW, STATUS_KEY, tableOfPartition, tablePartition } from '../telemetry/status-layout.js';

export interface RecordedSchema {
  readonly state: SchemaState;
  readonly version: number;
}

/** Bytes of state JSON kept in the row at most; the history is cut first, the columns never. */
const MAX_STATE_CHARS = 300_000;

/** The state cut to fit one item: fewer changes and DDL kept when it is too long (the counts stay). */
export function fitState(state: SchemaState, maxChars = MAX_STATE_CHARS): string {
  let fitted = state;
  let text = JSON.stringify(fitted);
  for (const keep of [20, 5, 0]) {
    if (text.length <= maxChars) break;
    fitted = { ...fitted, changes: fitted.changes.slice(-keep), ddl: fitted.ddl.slice(-Math.min(keep, 5)) };
    text = JSON.stringify(fitted);
  }
  return text;
}

export class SchemaStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly pipeline: string,
  ) {}

  private key(table: string): Record<string, AttributeValue> {
    return { [STATUS_KEY.partition]: { S: tablePartition(this.pipeline, table) }, [STATUS_KEY.row]: { S: SCHEMA_ROW } };
  }

  /** The recorded schemas of `tables` (consistent reads); a table with none is absent. */
  async load(tables: readonly string[]): Promise<Map<string, RecordedSchema>> {
    const out = new Map<string, RecordedSchema>();
    for (let i = 0; i < tables.length; i += 100) {
      let keys = tables.slice(i, i + 100).map((t) => this.key(t));
      for (let round = 0; keys.length > 0 && round < 8; round++) {
        const res = await this.client.send(new BatchGetItemCommand({ RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } } }));
        for (const item of res.Responses?.[this.tableName] ?? []) {
          const table = tableOfPartition(this.pipeline, item[STATUS_KEY.partition]?.S ?? '');
          const recorded = table === null ? undefined : parseRow(item);
          if (table !== null && recorded) out.set(table, recorded);
        }
        keys = res.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
      }
    }
    return out;
  }

  /**
   * Writes `state` as version `expected + 1` if the row is still at `expected` (0: no row yet).
   * Returns false when another writer got there first.
   */
  async save(table: string, state: SchemaState, expected: number, now: number): Promise<boolean> {
    const present = state.columns.filter((c) => c.present).length;
    try {
      // UpdateItem, not PutItem: the ingest role writes the status table with UpdateItem only.
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(table),
          UpdateExpression: 'SET #s = :s, #v = :next, #c = :c, #t = :t, #i = :i, #u = :u',
          ConditionExpression: expected === 0 ? 'attribute_not_exists(#v)' : '#v = :v',
          ExpressionAttributeNames: { '#s': 'schema', '#v': 'version', '#c': 'columns', '#t': 'changes', '#i': 'incompatible', '#u': 'updatedAt' },
          ExpressionAttributeValues: {
            ':s': { S: fitState(state) },
            ':next': { N: String(expected + 1) },
            ':c': { N: String(present) },
            ':t': { N: String(state.total) },
            ':i': { N: String(state.incompatible) },
            ':u': { N: String(now) },
            ...(expected === 0 ? {} : { ':v': { N: String(expected) } }),
          },
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }
}

/** A schema row's state and version; undefined when it does not hold a readable state. */
export function parseRow(item: Record<string, AttributeValue>): RecordedSchema | undefined {
  const text = item.schema?.S;
  const version = Number(item.version?.N ?? 0);
  if (text === undefined || !Number.isSafeInteger(version)) return undefined;
  try {
    const state: unknown = JSON.parse(text);
    return isSchemaState(state) ? { state, version } : undefined;
  } catch {
    return undefined;
  }
}
