/** The erase ledger: a keyed hash (never the key), and the rule "at or before the erasure is blocked". */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyHash, LedgerView, loadLedgerSecret } from '../../../functions/erase/ledger.js';

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

  it('reads the secret from the named variable, failing with its name; secretsmanager through the Lambda extension', async () => {
    await assert.rejects(loadLedgerSecret('env:MY_KEY', {}), /Environment variable MY_KEY is required/);
    await assert.rejects(loadLedgerSecret('env:MY_KEY', { MY_KEY: 'short' }), /at least 16 bytes/);
    assert.equal((await loadLedgerSecret('env:MY_KEY', { MY_KEY: 'sixteen-bytes-or-more' })).toString(), 'sixteen-bytes-or-more');
    await assert.rejects(loadLedgerSecret('secretsmanager:shop/k', {}), /only be read inside the deployed functions/);
    const seen: string[] = [];
    const fetchFn = (async (url: string, init: { headers: Record<string, string> }) => {
      seen.push(url, init.headers['X-Aws-Parameters-Secrets-Token'] ?? '');
      return new Response(JSON.stringify({ SecretString: 'from-secrets-manager-1234' }));
    }) as unknown as typeof fetch;
    const got = await loadLedgerSecret('secretsmanager:shop/k', { AWS_SESSION_TOKEN: 'tok' }, fetchFn);
    assert.equal(got.toString(), 'from-secrets-manager-1234');
    assert.deepEqual(seen, ['http://localhost:2773/secretsmanager/get?secretId=shop%2Fk', 'tok']);
  });
});
