/**
 * The erase ledger: a keyed hash (never the key) under a key id, the rule "at or before the erasure
 * is blocked", and the ledger keys: one plain key or a key ring for rotation, each key checked
 * against the fingerprint stored for its id (issue 20, item 5: a wrong key once passed silently,
 * so a replay restored erased rows).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DynamoDBClient, GetItemCommand, PutItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { EraseLedger, EraseSecretError, LedgerKeyring, LedgerView, loadLedgerKeys } from '../../../../functions/adapters/erase-ledger.js';
import { keyFingerprint, keyHash } from '../../../../functions/core/key-hash.js';

const secret = Buffer.from('a-ledger-secret-of-enough-bytes');
const ring = LedgerKeyring.parse(secret.toString());

/** A DynamoDB mock holding the ledger partition's rows in memory (GetItem, conditional PutItem, Query). */
function ledgerTable() {
  const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
  const mock = mockClient(client);
  const rows = new Map<string, Record<string, { S?: string; N?: string }>>();
  mock.on(GetItemCommand).callsFake((input: { Key: { table: { S: string } } }) => ({ Item: rows.get(input.Key.table.S) }));
  mock.on(PutItemCommand).callsFake((input: { Item: Record<string, { S?: string; N?: string }> }) => {
    rows.set(input.Item.table?.S ?? '', input.Item);
    return {};
  });
  mock.on(QueryCommand).callsFake(() => ({ Items: [...rows.values()] }));
  return { ledger: new EraseLedger(client, 'shop-status', 'shop'), rows };
}

describe('erase ledger', () => {
  it('hashes table and key with the secret: stable, and different under another secret or table', () => {
    const h = keyHash(secret, 'public.customers', '["42"]');
    assert.equal(h, keyHash(secret, 'public.customers', '["42"]'));
    assert.notEqual(h, keyHash(Buffer.from('another-secret-of-enough-bytes'), 'public.customers', '["42"]'));
    assert.notEqual(h, keyHash(secret, 'public.orders', '["42"]'));
    assert.equal(h.includes('42'), false);
    assert.match(h, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(ring.hash('public.customers', '["42"]'), { keyId: 'k1', keyHash: h });
  });

  it('blocks changes at or below the erasure position and lets later ones through', () => {
    const view = new LedgerView(ring, [
      { table: 't', keyHash: keyHash(secret, 't', '["1"]'), keyId: 'k1', position: '05', erasedAt: 1, reason: 'r' },
      { table: 't', keyHash: keyHash(secret, 't', '["1"]'), keyId: 'k1', position: '03', erasedAt: 2, reason: 'r' },
    ]);
    assert.equal(view.blocks('t', '["1"]', '04'), true);
    assert.equal(view.blocks('t', '["1"]', '05'), true);
    assert.equal(view.blocks('t', '["1"]', '06'), false);
    assert.equal(view.blocks('t', '["2"]', '01'), false);
    assert.equal(view.blocks('u', '["1"]', '01'), false);
    assert.equal(view.size, 1);
  });

  it('reads a key ring and matches each entry with the key of its id (rotation)', () => {
    const k2 = 'the-second-ledger-key-0123456789';
    const rotated = LedgerKeyring.parse(JSON.stringify({ current: 'k2', keys: { k1: secret.toString(), k2 } }));
    assert.equal(rotated.current.id, 'k2');
    assert.equal(rotated.hash('t', '["1"]').keyHash, keyHash(Buffer.from(k2), 't', '["1"]'));
    const view = new LedgerView(rotated, [
      { table: 't', keyHash: keyHash(secret, 't', '["1"]'), keyId: 'k1', position: '05', erasedAt: 1, reason: 'before rotation' },
      { table: 't', keyHash: keyHash(Buffer.from(k2), 't', '["2"]'), keyId: 'k2', position: '07', erasedAt: 2, reason: 'after' },
    ]);
    assert.equal(view.blocks('t', '["1"]', '05'), true, 'an entry of the old key still blocks');
    assert.equal(view.blocks('t', '["2"]', '07'), true);
    assert.throws(() => LedgerKeyring.parse(JSON.stringify({ current: 'k3', keys: { k1: secret.toString() } })), /names "k3" as current but holds no such key/);
    assert.throws(() => LedgerKeyring.parse('{"current": 1}'), /a ledger key ring is/);
    assert.throws(() => LedgerKeyring.parse('short'), /at least 16 bytes/);
  });

  it('stores each key id fingerprint on first use and refuses a key whose fingerprint differs, naming the id', async () => {
    const { ledger, rows } = ledgerTable();
    await ledger.verify(ring);
    assert.equal(rows.get('#key#k1')?.fingerprint?.S, keyFingerprint(secret));
    await ledger.verify(ring);
    const wrong = LedgerKeyring.parse('a-wrong-key-of-enough-bytes-000');
    const err = await ledger.verify(wrong).catch((e: unknown) => e);
    assert.ok(err instanceof EraseSecretError);
    assert.match(err.message, /key with id k1 is not the key the ledger was written with/);
    await assert.rejects(ledger.view(wrong), EraseSecretError);
  });

  it('refuses a view when entries were hashed with a key id the ring does not hold, and keeps key rows out of the entries', async () => {
    const { ledger } = ledgerTable();
    await ledger.record({ table: 't', keyHash: 'h', keyId: 'k0', position: '01', erasedAt: 1, reason: 'r' });
    assert.deepEqual(
      (await ledger.list()).map((e) => e.keyId),
      ['k0'],
    );
    await assert.rejects(ledger.view(ring), /hashed with key id k0, which the key ring does not hold/);
  });

  it('reads the key from the named variable, failing with its name; secretsmanager with GetSecretValue', async () => {
    await assert.rejects(loadLedgerKeys('env:MY_KEY', {}), /Environment variable MY_KEY is required/);
    await assert.rejects(loadLedgerKeys('env:MY_KEY', { MY_KEY: 'short' }), /at least 16 bytes/);
    assert.equal((await loadLedgerKeys('env:MY_KEY', { MY_KEY: 'sixteen-bytes-or-more' })).current.secret.toString(), 'sixteen-bytes-or-more');
    const seen: string[] = [];
    const got = await loadLedgerKeys('secretsmanager:shop/k', {}, async (id) => {
      seen.push(id);
      return 'from-secrets-manager-1234';
    });
    assert.equal(got.current.secret.toString(), 'from-secrets-manager-1234');
    assert.deepEqual(seen, ['shop/k']);
    await assert.rejects(loadLedgerKeys('secretsmanager:shop/k', {}, async () => undefined), /secret shop\/k has no SecretString/);
    await assert.rejects(
      loadLedgerKeys('secretsmanager:shop/k', {}, async () => {
        throw new Error('AccessDeniedException');
      }),
      /secret shop\/k could not be read: AccessDeniedException/,
    );
    await assert.rejects(loadLedgerKeys('ssm:x', {}), /must be env:<VARIABLE> or secretsmanager:<id>/);
  });

  it('reads a secretsmanager reference through the SDK client by default', async () => {
    const sm = mockClient(SecretsManagerClient);
    sm.on(GetSecretValueCommand, { SecretId: 'shop/k' }).resolves({ SecretString: 'sdk-read-secret-value' });
    try {
      assert.equal((await loadLedgerKeys('secretsmanager:shop/k', {})).current.secret.toString(), 'sdk-read-secret-value');
      assert.equal(sm.commandCalls(GetSecretValueCommand).length, 1);
    } finally {
      sm.restore();
    }
  });
});
