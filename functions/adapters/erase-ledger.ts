/**
 * The erase ledger: one entry per erased (table, key), so that replay and reconcile never bring an
 * erased row back from older history while a later, genuine change of the same key still applies.
 *
 * An entry holds a keyed hash of the key (ledger-keys.ts: HMAC-SHA-256 with a secret, so the ledger
 * alone cannot be matched against guessed keys) and the id of the key that hashed it, the highest
 * position known for the key when it was erased, the time and a reason. Never values, never the key
 * itself. Entries live in the status table under the partition `<pipeline>#erased`, sort key
 * `<table>#<hash>`, so `tidemark status` never shows them. Beside them, one row per key id holds
 * that key's fingerprint (sort key `#key#<id>`), written on first use: a key whose fingerprint
 * differs is refused, because it would match no entry.
 *
 *   const ledger = new EraseLedger(dynamodb, config.statusTable, config.name);
 *   const view = await ledger.view(keyring, ['public.customers']);
 *   view.blocks('public.customers', '["42"]', encodedPosition)   // true: at or before the erasure
 */
import { type AttributeValue, ConditionalCheckFailedException, type DynamoDBClient, GetItemCommand, PutItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { keyHash } from '../core/key-hash.js';
import { EraseSecretError, FIRST_KEY_ID, type LedgerKey, type LedgerKeyring } from './ledger-keys.js';

export { EraseSecretError, LedgerKeyring, loadLedgerKeys } from './ledger-keys.js';

export interface LedgerEntry {
  readonly table: string;
  /** HMAC-SHA-256 (base64url) of the table and canonical key text, under key `keyId`. */
  readonly keyHash: string;
  /** The ledger key that made `keyHash` (`k1` for entries written before key ids). */
  readonly keyId: string;
  /** Encoded position: changes of the key at or below it are never applied again. `''` when none was known. */
  readonly position: string;
  readonly erasedAt: number;
  readonly reason: string;
}

const MAX_REASON = 200;
const KEY_ROW_PREFIX = '#key#';

/** Which changes the ledger forbids: a key's changes at or below its erasure position. */
export class LedgerView {
  /** table → key id → hash → entry (the highest position of the key's erasures). */
  private readonly byTable = new Map<string, Map<string, Map<string, LedgerEntry>>>();

  constructor(
    private readonly keys: LedgerKeyring,
    entries: readonly LedgerEntry[],
  ) {
    for (const e of entries) {
      const ids = this.byTable.get(e.table) ?? new Map<string, Map<string, LedgerEntry>>();
      const m = ids.get(e.keyId) ?? new Map<string, LedgerEntry>();
      const seen = m.get(e.keyHash);
      if (!seen || seen.position < e.position) m.set(e.keyHash, e);
      ids.set(e.keyId, m);
      this.byTable.set(e.table, ids);
    }
  }

  get size(): number {
    let n = 0;
    for (const ids of this.byTable.values()) for (const m of ids.values()) n += m.size;
    return n;
  }

  /** The key's entry (the latest erasure under any key id), if any. */
  entry(table: string, canonicalKey: string): LedgerEntry | undefined {
    let found: LedgerEntry | undefined;
    for (const [id, m] of this.byTable.get(table) ?? []) {
      const key = this.keys.key(id);
      const e = key ? m.get(keyHash(key.secret, table, canonicalKey)) : undefined;
      if (e && (!found || found.position < e.position)) found = e;
    }
    return found;
  }

  /** True when a change of the key at `encodedPosition` is older than (or as old as) its erasure. */
  blocks(table: string, canonicalKey: string, encodedPosition: string): boolean {
    const e = this.entry(table, canonicalKey);
    return e !== undefined && encodedPosition <= e.position;
  }
}

/**
 * The ledger position of a key whose future arrivals are refused (`erase --block-future`): above
 * every encoded position (those are dotted runs of a length letter `a`–`z` and digits), so every
 * change of the key is at or below it. The tombstone erase leaves carries it too, without expiry.
 */
export const BLOCK_ALL_POSITION = '~';

const S = (v: string): AttributeValue => ({ S: v });

export class EraseLedger {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly statusTable: string,
    private readonly pipeline: string,
  ) {}

  private get partition(): string {
    return `${this.pipeline}#erased`;
  }

  /** Records an erasure; a second erasure of the same key keeps the higher position. */
  async record(entry: LedgerEntry): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.statusTable,
          Item: {
            pipeline: S(this.partition),
            table: S(`${entry.table}#${entry.keyHash}`),
            source: S(entry.table),
            keyHash: S(entry.keyHash),
            keyId: S(entry.keyId),
            position: S(entry.position),
            erasedAt: { N: String(entry.erasedAt) },
            reason: S(entry.reason.slice(0, MAX_REASON)),
          },
          ConditionExpression: 'attribute_not_exists(#p) OR #p <= :p',
          ExpressionAttributeNames: { '#p': 'position' },
          ExpressionAttributeValues: { ':p': S(entry.position) },
        }),
      );
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
    }
  }

  /** Every entry, or those of some tables. */
  async list(tables?: readonly string[]): Promise<LedgerEntry[]> {
    const out: LedgerEntry[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const res = await this.client.send(
        new QueryCommand({
          TableName: this.statusTable,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': 'pipeline' },
          ExpressionAttributeValues: { ':pk': S(this.partition) },
          ExclusiveStartKey: start,
          ConsistentRead: true,
        }),
      );
      for (const item of res.Items ?? []) {
        if (item.table?.S?.startsWith(KEY_ROW_PREFIX)) continue;
        const e: LedgerEntry = {
          table: item.source?.S ?? '',
          keyHash: item.keyHash?.S ?? '',
          keyId: item.keyId?.S ?? FIRST_KEY_ID,
          position: item.position?.S ?? '',
          erasedAt: Number(item.erasedAt?.N ?? 0),
          reason: item.reason?.S ?? '',
        };
        if (!tables || tables.includes(e.table)) out.push(e);
      }
      start = res.LastEvaluatedKey;
    } while (start);
    return out.sort((a, b) => a.erasedAt - b.erasedAt || (a.keyHash < b.keyHash ? -1 : 1));
  }

  /**
   * Checks every key of the ring against the fingerprint stored for its id, storing it on first use.
   * Throws EraseSecretError naming the id of a key that is not the one the ledger was written with.
   */
  async verify(keys: LedgerKeyring): Promise<void> {
    for (const key of keys.keys) await this.verifyKey(key);
  }

  private async verifyKey(key: LedgerKey): Promise<void> {
    const row = { pipeline: S(this.partition), table: S(`${KEY_ROW_PREFIX}${key.id}`) };
    const got = await this.client.send(new GetItemCommand({ TableName: this.statusTable, Key: row, ConsistentRead: true }));
    let stored = got.Item?.fingerprint?.S;
    if (stored === undefined) {
      try {
        await this.client.send(
          new PutItemCommand({ TableName: this.statusTable, Item: { ...row, fingerprint: S(key.fingerprint) }, ConditionExpression: 'attribute_not_exists(fingerprint)' }),
        );
        return;
      } catch (err) {
        if (!(err instanceof ConditionalCheckFailedException)) throw err;
        // Another run registered the id meanwhile: compare with what it stored.
        stored = (await this.client.send(new GetItemCommand({ TableName: this.statusTable, Key: row, ConsistentRead: true }))).Item?.fingerprint?.S;
      }
    }
    if (stored !== key.fingerprint) {
      throw new EraseSecretError(
        `the erase ledger key with id ${key.id} is not the key the ledger was written with (its fingerprint differs): a wrong key would match no erased key, so nothing runs with it. Use the key stored in replay.erase.ledgerKeySecret; to rotate, add a new key id (docs/replay.md, "The ledger key")`,
      );
    }
  }

  /** The entries of some tables, with every key checked against the ledger first. */
  async view(keys: LedgerKeyring, tables?: readonly string[]): Promise<LedgerView> {
    await this.verify(keys);
    const entries = await this.list(tables);
    const missing = [...new Set(entries.map((e) => e.keyId))].filter((id) => keys.key(id) === undefined);
    if (missing.length > 0) throw new EraseSecretError(`ledger entries were hashed with key id ${missing.join(', ')}, which the key ring does not hold: keep every key id in the ring (docs/replay.md, "The ledger key")`);
    return new LedgerView(keys, entries);
  }
}
