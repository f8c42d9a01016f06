/**
 * The erase ledger's keys, read from where `replay.erase.ledgerKeySecret` says (`env:<VARIABLE>` or
 * `secretsmanager:<id>`), with key ids so that the key can be rotated. The secret's value is either
 * the key itself (key id `k1`), or a key ring:
 *
 *   { "current": "k2", "keys": { "k1": "<the first key>", "k2": "<the new key>" } }
 *
 * New ledger entries (and log lines) are hashed with the `current` key; an entry is matched with the
 * key of the id it was written under, so rotating means adding a key and making it current, never
 * removing one whose entries still matter (a hash cannot be re-keyed without the erased key).
 * Every id's fingerprint is stored with the ledger on first use (erase-ledger.ts), and a key that
 * does not match it is refused, naming the id: a wrong key would match no entry and let erased rows
 * come back.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { errorMessage, TidemarkError } from '../core/errors.js';
import { keyFingerprint, keyHash } from '../core/key-hash.js';

export class EraseSecretError extends TidemarkError {
  constructor(message: string) {
    super(message);
    this.name = 'EraseSecretError';
  }
}

/** The key id of a secret that holds one plain key (every ledger written before key ids). */
export const FIRST_KEY_ID = 'k1';

const MIN_SECRET_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

export interface LedgerKey {
  readonly id: string;
  readonly secret: Buffer;
  readonly fingerprint: string;
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

function keyOf(id: string, value: unknown): LedgerKey {
  if (!KEY_ID.test(id)) throw new EraseSecretError(`ledger key id "${id.slice(0, 40)}" must be 1-32 letters, digits, _ or -`);
  if (typeof value !== 'string') throw new EraseSecretError(`ledger key "${id}" must be a string`);
  const secret = Buffer.from(value, 'utf8');
  if (secret.length < MIN_SECRET_BYTES) throw new EraseSecretError(`the erase ledger key${id === FIRST_KEY_ID ? '' : ` "${id}"`} must be at least ${MIN_SECRET_BYTES} bytes`);
  return { id, secret, fingerprint: keyFingerprint(secret) };
}

/** The keys of a secret value: one plain key, or `{current, keys}`. */
export class LedgerKeyring {
  readonly current: LedgerKey;
  private readonly byId: ReadonlyMap<string, LedgerKey>;

  constructor(keys: readonly LedgerKey[], currentId: string) {
    this.byId = new Map(keys.map((k) => [k.id, k]));
    const current = this.byId.get(currentId);
    if (!current) throw new EraseSecretError(`the ledger key ring names "${currentId}" as current but holds no such key`);
    this.current = current;
  }

  /** One plain key (id `k1`), or a JSON key ring. */
  static parse(value: string): LedgerKeyring {
    const trimmed = value.trim();
    if (!trimmed.startsWith('{')) return new LedgerKeyring([keyOf(FIRST_KEY_ID, value)], FIRST_KEY_ID);
    let ring: unknown;
    try {
      ring = JSON.parse(trimmed);
    } catch {
      throw new EraseSecretError('the ledger key looks like a key ring ({"current": …, "keys": {…}}) but is not valid JSON');
    }
    const { current, keys } = (ring ?? {}) as { current?: unknown; keys?: unknown };
    if (typeof current !== 'string' || keys === null || typeof keys !== 'object' || Array.isArray(keys)) {
      throw new EraseSecretError('a ledger key ring is {"current": "<key id>", "keys": {"<key id>": "<key>", …}}');
    }
    return new LedgerKeyring(
      Object.entries(keys).map(([id, k]) => keyOf(id, k)),
      current,
    );
  }

  get keys(): readonly LedgerKey[] {
    return [...this.byId.values()];
  }

  key(id: string): LedgerKey | undefined {
    return this.byId.get(id);
  }

  /** The hash of a key under the current key, with that key's id: what a new ledger entry stores. */
  hash(table: string, canonicalKey: string): { keyId: string; keyHash: string } {
    return { keyId: this.current.id, keyHash: keyHash(this.current.secret, table, canonicalKey) };
  }
}

/**
 * Resolves `replay.erase.ledgerKeySecret` into the key ring. Fails with the variable or secret
 * named, never with the value.
 */
export async function loadLedgerKeys(reference: string, env: NodeJS.ProcessEnv = process.env, readSecret: SecretReader = sdkSecretReader): Promise<LedgerKeyring> {
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
  return LedgerKeyring.parse(value);
}
