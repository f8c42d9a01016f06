/**
 * The stored content digest (`__hash`): 22 base64url characters, the prefix of the 43-character
 * digest stored before, so a redelivery of an event written before the change is still a
 * duplicate, not a conflict.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { outcomeOf, resolveAgainstStored } from '../../../../functions/core/stored.js';
import { CONTENT_HASH_LENGTH, contentCanonical, contentHash, planBatch, sameContent } from '../../../../functions/core/plan.js';
import { sourcePosition } from '../../../../functions/core/position.js';
import type { ChangeEvent } from '../../../../functions/core/types.js';
import { legacyContentHash } from '../../../helpers/legacy-json.js';

const event = (after: Record<string, unknown>, placeholders: string[] = []): ChangeEvent => ({
  kind: 'change',
  format: 'test',
  op: 'u',
  table: 'public.orders',
  key: { id: 1 },
  before: { id: 1, status: 'paid' },
  after: after as ChangeEvent['after'],
  patch: null,
  placeholders,
  position: sourcePosition(5n),
  txid: null,
  commitTs: null,
  snapshot: false,
});

describe('content hash', () => {
  it('is 22 base64url characters and the prefix of the former 43-character digest', () => {
    for (const e of [event({ id: 1, status: 'shipped' }), event({ id: 1, b: 2, a: 1 }, ['b', 'a']), event({})]) {
      const h = contentHash(e);
      assert.equal(h.length, CONTENT_HASH_LENGTH);
      assert.match(h, /^[A-Za-z0-9_-]{22}$/);
      assert.equal(legacyContentHash(e).slice(0, CONTENT_HASH_LENGTH), h);
    }
  });

  it('writes the canonical text in sorted key order with sorted placeholders', () => {
    assert.equal(contentCanonical(event({ id: 1, b: 2 }, ['z', 'a'])), '{"after":{"b":2,"id":1},"before":{"id":1,"status":"paid"},"op":"u","patch":null,"placeholders":["a","z"]}');
  });

  it('tells content apart and accepts a stored legacy digest of the same content', () => {
    const a = event({ id: 1, status: 'shipped' });
    const b = event({ id: 1, status: 'returned' });
    assert.notEqual(contentHash(a), contentHash(b));
    assert.ok(sameContent(legacyContentHash(a), contentHash(a)));
    assert.ok(!sameContent(legacyContentHash(b), contentHash(a)));
    assert.ok(!sameContent(contentHash(a).slice(0, 21), contentHash(a)));
    const [write] = planBatch([a], () => 'k').writes;
    assert.ok(write);
    const at = write.encodedPosition;
    const decide = (contentHash: string) => outcomeOf(resolveAgainstStored({ position: at, contentHash }, write));
    assert.equal(decide(legacyContentHash(a)), 'duplicate');
    assert.equal(decide(legacyContentHash(b)), 'conflict');
    assert.equal(decide(contentHash(a)), 'duplicate');
  });
});
