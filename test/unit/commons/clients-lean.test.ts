/**
 * createClients trims per-request middleware neither DynamoDB nor S3 needs (measured in
 * `npm run bench`, goal 6); the signing, retry and serialization middleware must stay.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createClients, destroyClients } from '../../../bin/local/clients.js';

describe('createClients middleware', () => {
  it('drops the user-agent and logger middleware from the DynamoDB and S3 clients, and keeps signing and retries', () => {
    const clients = createClients({ dynamodb: 'http://127.0.0.1:1', kinesis: 'http://127.0.0.1:1', s3: 'http://127.0.0.1:1', region: 'us-east-1', accessKeyId: 'a', secretAccessKey: 'b' });
    try {
      for (const client of [clients.dynamodb, clients.s3]) {
        const names = client.middlewareStack.identify().join('\n');
        assert.doesNotMatch(names, /getUserAgentMiddleware|loggerMiddleware/);
        assert.match(names, /httpSigningMiddleware/);
        assert.match(names, /retryMiddleware/);
        assert.match(names, /serializerMiddleware/);
      }
    } finally {
      destroyClients(clients);
    }
  });
});
