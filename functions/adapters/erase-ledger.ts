/**
 * The erase ledger: one entry per erased (table, key), so that replay and reconcile never bring an
 * erased row back from older history while a later, genuine change of the same key still applies.
 *
 * An entry holds a keyed hash of the key (HMAC-SHA-256 with a secret, so the ledger alone cannot be
 * matched against guessed keys), the highest position known for the key when it was erased, the
 * time and a reason. Never values, never the key itself. Entries live in the status table under
 * the partition `<pipeline>#erased`, sort key `<table>#<hash>`, so `tidemark status` never shows them.
 *
 *   const ledger = new EraseLedger(dynamodb, config.statusTable, config.name);
 *   const view = await ledger.view(secret, ['public.customers']);
 *   view.blocks('public.customers', '["42"]', encodedPosition)   // true: at or before the erasure
 */
import { createHmac } from 'node:crypto';
import { type AttributeValue, ConditionalCheckFailedException, type DynamoDBClient, PutItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { errorMessage, TidemarkError } from '../core/errors.js';

export interface LedgerEntry {
  readonly table: string;
  /** HMAC-SHA-256 (base64url) of the table and canonical key text. */
  readonly keyHash: string;
  /** Encoded position: changes of the key at or below it are never applied again. `''` when none was known. */
  readonly position: string;
  readonly erasedAt: number;
  readonly reason: string;
}

export class EraseSecretError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'EraseSecretError';
  }
}

const MIN_SECRET_BYTES = 16;
const MAX_REASON = 200;

/** The ledger's keyed hash of a key: `{"id":42}` in `public.customers` → 43 base64url characters. */
export function keyHash(secret: Uint8Array, table: string, canonicalKey: string): string {
  return createHmac('sha256', secret).update(table).update('\0').update(canonicalKey).digest('base64url');
}

/** Reads a secret's string value by id (name or ARN); undefined when it has none. */
export type SecretReader = (id: string) => Promise<string | undefined>;

/** GetSecretValue with the SDK, in the function's (or the operator's) region and credentials. */
const sdkSecretReader: SecretReader = async (id) => {
  const client = new SecretsManagerClient({});
  try {
    return (await client.send(new GetSecretValueCommand({ SecretId: id }))).SecretString;
  } finally {
    client.destroy();
  }
};

/**
 * Resolves `replay.erase.ledgerKeySecret`: `env:NAME` reads the variable; `secretsmanager:ID` reads
 * the secret with GetSecretValue (the deployed replay and erase roles may read exactly that one).
 * Fails with the variable or secret named, never with the value.
 */
export async function loadLedgerSecret(reference: string, env: NodeJS.ProcessEnv = process.env, readSecret: SecretReader = sdkSecretReader): Promise<Buffer> {
  let value: string | undefined;
  if (reference.startsWith('env:')) {
    const name = reference.slice(4);
    value = env[name];
    if (value === undefined || value === '') throw new EraseSecretError(`Environment variable ${name} is required: it holds the erase ledger key (replay.erase.ledgerKeySecret)`);
  } else if (reference.startsWith('secretsmanager:')) {
    const id = reference.slice('secretsmanager:'.length);
    try {
      value = await readSecret(id);
    } catch (err) {
      throw new EraseSecretError(`secret ${id} could not be read: ${errorMessage(err)}`);
    }
    if (!value) throw new EraseSecretError(`secret ${id} has no SecretString`);
  } else {
    throw new EraseSecretError(`ledgerKeySecret "${reference}" must be env:<VARIABLE> or secretsmanager:<id>`);
  }
  const bytes = Buffer.from(value, 'utf8');
  if (bytes.length < MIN_SECRET_BYTES) throw new EraseSecretError(`the erase ledger key must be at least ${MIN_SECRET_BYTES} bytes`);
  return bytes;
}

/** Which changes the ledger forbids: a key's changes at or below its erasure position. */
export class LedgerView {
  private readonly byTable = new Map<string, Map<string, LedgerEntry>>();

  constructor(
    private readonly secret: Uint8Array,
    entries: readonly LedgerEntry[],
  ) {
    for (const e of entries) {
      const m = this.byTable.get(e.table) ?? new Map<string, LedgerEntry>();
      const seen = m.get(e.keyHash);
      if (!seen || seen.position < e.position) m.set(e.keyHash, e);
      this.byTable.set(e.table, m);
    }
  }

  get size(): number {
    let n = 0;
    for (const m of this.byTable.values()) n += m.size;
    return n;
  }

  entry(table: string, canonicalKey: string): LedgerEntry | undefined {
    const m = this.byTable.get(table);
    return m && m.size > 0 ? m.get(keyHash(this.secret, table, canonicalKey)) : undefined;
  }

  /** True when a change of the key at `encodedPosition` is older than (or as old as) its erasure. */
  blocks(table: string, canonicalKey: string, encodedPosition: string): boolean {
    const e = this.entry(table, canonicalKey);
    return e !== undefined && encodedPosition <= e.position;
  }
}

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
        const e: LedgerEntry = {
          table: item.source?.S ?? '',
          keyHash: item.keyHash?.S ?? '',
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

  async view(secret: Uint8Array, tables?: readonly string[]): Promise<LedgerView> {
    return new LedgerView(secret, await this.list(tables));
  }
}
