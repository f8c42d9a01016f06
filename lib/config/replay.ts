/**
 * The `replay` section of the pipeline config: how the replay and erase jobs run. Every field has a
 * default, so a config without the section is complete. Example:
 *
 *   "replay": { "maxConcurrency": 20, "toleratedFailurePercentage": 1,
 *               "erase": { "ledgerKeySecret": "secretsmanager:shop/erase-ledger-key" } }
 */
import { z } from 'zod';

export { ledgerKeySecretName } from '../../functions/config/types.js';

/** Where the erase ledger's HMAC key comes from: `env:<VARIABLE>` or `secretsmanager:<secret id or ARN>`. */
const secretReference = z
  .string()
  .regex(/^(env:[A-Za-z_][A-Za-z0-9_]*|secretsmanager:[A-Za-z0-9/_+=.@:-]+)$/, 'must be env:<VARIABLE> or secretsmanager:<secret id>');

export const EraseConfigSchema = z.strictObject({
  /**
   * The key of the ledger's keyed hash (HMAC-SHA-256 of table and key): without it a ledger entry
   * cannot be tied back to a key by guessing. With `env:<VARIABLE>`, the CLI reads the variable and
   * the deployed functions read the secret the stack generates (`ledgerKeySecretName`); with
   * `secretsmanager:<id>`, the deployed functions read that secret and the stack creates none.
   * @default "env:TIDEMARK_ERASE_KEY"
   */
  ledgerKeySecret: secretReference.default('env:TIDEMARK_ERASE_KEY'),
  /**
   * Leave a tombstone (key and position, no values) for `tombstoneTtlDays` after an erase, so a
   * redelivered older change cannot bring the row back through ingest in the meantime. @default true
   */
  keepTombstone: z.boolean().default(true),
});

export const ReplayConfigSchema = z
  .strictObject({
    /** Distributed Map child executions at once (a replay's key bucket, an erase's batch of raw objects, each). @default 10 */
    maxConcurrency: z.number().int().min(1).max(10_000).default(10),
    /** Share of failed items the Distributed Map tolerates before the run fails. @default 0 */
    toleratedFailurePercentage: z.number().min(0).max(100).default(0),
    /** Raw objects per item of erase's Distributed Map (replay's items are key buckets: `history.replayBuckets`). @default 20 */
    objectsPerBatch: z.number().int().min(1).max(1000).default(20),
    /**
     * Where job requests, manifests and results are written in the raw bucket; its objects expire
     * after `jobsRetentionDays` (an erase request holds a key until its run deletes it). @default "jobs/"
     */
    jobsPrefix: z
      .string()
      .regex(/^([A-Za-z0-9._=-]+\/)+$/, 'must be a key prefix ending in "/", e.g. "jobs/"')
      .default('jobs/'),
    /** Days objects under `jobsPrefix` are kept. @default 14 */
    jobsRetentionDays: z.number().int().min(1).max(3650).default(14),
    /**
     * Where the event source mapping's S3 on-failure destination writes (one invocation record with
     * the whole batch per object, named `aws/lambda/<mapping id>/<shard>/YYYY/MM/DD/…`), read by
     * `replay --from-dlq`. @default "aws/lambda/"
     */
    onFailurePrefix: z.string().default('aws/lambda/'),
    /** Bucket of the S3 on-failure destination. @default the raw bucket */
    onFailureBucket: z.string().min(3).optional(),
    erase: EraseConfigSchema.prefault({}),
  })
  .prefault({});

export type ReplayConfig = z.infer<typeof ReplayConfigSchema>;
