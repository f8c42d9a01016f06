/** The erase ledger: a keyed hash (never the key), and the rule "at or before the erasure is blocked". */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { keyHash, LedgerView, loadLedgerSecret } from '../../../../functions/adapters/erase-ledger.js';

const secret = Buffer.from('a-ledger-secret-of-enough-bytes');

describe('erase ledger', () => {
  it('hashes table and key with the secret: stable, and different under another secret or table', () => {
    const h = keyHash(secret, 'public.customers', '["42"]');
    assert.equal(h, keyHash(secret, 'public.customers', '["42"]'));
    assert.notEqual(h, keyHash(Buffer.from('another-secret-of-enough-bytes'), 'public.customers', '["42"]'));
    assert.notEqual(h, keyHash(secret, 'public.orders', '["42"]'));
    assert.equal(h.includes('42'), false);
    assert.match(h, /^[A-Za-z0-9_-]{43}$/);
  });

  it('blocks changes at or below the erasure position and lets later ones through', () => {
    const view = new LedgerView(secret, [
      { table: 't', keyHash: keyHash(secret, 't', '["1"]'), position: '05', erasedAt: 1, reason: 'r' },
      { table: 't', keyHash: keyHash(secret, 't', '["1"]'), position: '03', erasedAt: 2, reason: 'r' },
    ]);
    assert.equal(view.blocks('t', '["1"]', '04'), true);
    assert.equal(view.blocks('t', '["1"]', '05'), true);
    assert.equal(view.blocks('t', '["1"]', '06'), false);
    assert.equal(view.blocks('t', '["2"]', '01'), false);
    assert.equal(view.blocks('u', '["1"]', '01'), false);
    assert.equal(view.size, 1);
  });

  it('reads the secret from the named variable, failing with its name; secretsmanager with GetSecretValue', async () => {
    await assert.rejects(loadLedgerSecret('env:MY_KEY', {}), /Environment variable MY_KEY is required/);
    await assert.rejects(loadLedgerSecret('env:MY_KEY', { MY_KEY: 'short' }), /at least 16 bytes/);
    assert.equal((await loadLedgerSecret('env:MY_KEY', { MY_KEY: 'sixteen-bytes-or-more' })).toString(), 'sixteen-bytes-or-more');
    const seen: string[] = [];
    const got = await loadLedgerSecret('secretsmanager:shop/k', {}, async (id) => {
      seen.push(id);
      return 'from-secrets-manager-1234';
    });
    assert.equal(got.toString(), 'from-secrets-manager-1234');
    assert.deepEqual(seen, ['shop/k']);
    await assert.rejects(loadLedgerSecret('secretsmanager:shop/k', {}, async () => undefined), /secret shop\/k has no SecretString/);
    await assert.rejects(
      loadLedgerSecret('secretsmanager:shop/k', {}, async () => {
        throw new Error('AccessDeniedException');
      }),
      /secret shop\/k could not be read: AccessDeniedException/,
    );
    await assert.rejects(loadLedgerSecret('ssm:x', {}), /must be env:<VARIABLE> or secretsmanager:<id>/);
  });

  it('reads a secretsmanager reference through the SDK client by default', async () => {
    const sm = mockClient(SecretsManagerClient);
    sm.on(GetSecretValueCommand, { SecretId: 'shop/k' }).resolves({ SecretString: 'sdk-read-secret-value' });
    try {
      assert.equal((await loadLedgerSecret('secretsmanager:shop/k', {})).toString(), 'sdk-read-secret-value');
      assert.equal(sm.commandCalls(GetSecretValueCommand).length, 1);
    } finally {
      sm.restore();
    }
  });
});
