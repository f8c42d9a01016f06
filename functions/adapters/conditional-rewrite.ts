/**
 * Read-modify-write of one S3 object that cannot undo a concurrent writer: the object is read with
 * its ETag, the change is decided from what was read, and the PUT (or DELETE) carries `If-Match`
 * with that ETag. When another writer got there first (an erasure of another key rewriting the
 * same batch object, a landing retry), S3 answers 412 Precondition Failed (or 409 Conflict while
 * the other request is in flight); the object is then read again and the change decided again
 * from the new content, so both changes survive.
 *
 *   const out = await rewriteIfUnchanged(s3, bucket, key, (body) =>
 *     body.includes(secret) ? { kind: 'put', body: without(body, secret) } : { kind: 'keep' });
 *   out.outcome   // 'put' | 'deleted' | 'kept' | 'gone' (the object no longer exists)
 *
 * S3 evaluates `If-Match` on PutObject and DeleteObject in general purpose buckets (Amazon S3
 * user guide, "How to perform conditional deletes" and "conditional writes").
 */
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { asError } from '../core/errors.js';

/** What to do with the object, decided from its current bytes. */
export type RewriteDecision =
  | { readonly kind: 'keep' }
  | { readonly kind: 'delete' }
  | {
      readonly kind: 'put';
      readonly body: Uint8Array;
      readonly contentType?: string;
      readonly contentEncoding?: string;
      readonly metadata?: Record<string, string>;
    };

export interface RewriteOutcome<T> {
  readonly outcome: 'put' | 'deleted' | 'kept' | 'gone';
  /** The version the PUT made (versioned buckets). */
  readonly versionId?: string;
  /** Times the object changed between the read and the write, so it was read again. */
  readonly retries: number;
  /** What the last decision returned alongside (counts of what it removed). */
  readonly detail: T | undefined;
}

export class RewriteContendedError extends Error {
  constructor(key: string, attempts: number) {
    super(`s3 object ${key} changed under every one of ${attempts} conditional rewrites; run the job again`);
    this.name = 'RewriteContendedError';
  }
}

const isMissing = (err: unknown) => {
  const e = asError(err) as Error & { $metadata?: { httpStatusCode?: number } };
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
};

/** 412: the ETag changed; 409: a concurrent write to the key is in flight. Both: read again. */
const isContended = (err: unknown) => {
  const e = asError(err) as Error & { $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  return e.name === 'PreconditionFailed' || e.name === 'ConditionalRequestConflict' || status === 412 || status === 409;
};

/** The object's bytes and ETag; null when it no longer exists. */
async function readCurrent(s3: S3Client, bucket: string, key: string): Promise<{ body: Buffer; etag: string | undefined } | null> {
  try {
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return { body: Buffer.from((await got.Body?.transformToByteArray()) ?? []), etag: got.ETag };
  } catch (err) {
    if (isMissing(err)) return null;
    throw err;
  }
}

/** Writes a put or delete decision under `If-Match`; 'contended' when another writer got there first. */
async function writeDecision(s3: S3Client, bucket: string, key: string, decision: Exclude<RewriteDecision, { kind: 'keep' }>, etag: string | undefined): Promise<{ outcome: 'put' | 'deleted' | 'gone' | 'contended'; versionId?: string }> {
  const ifMatch = etag ? { IfMatch: etag } : {};
  try {
    if (decision.kind === 'delete') {
      await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key, ...ifMatch }));
      return { outcome: 'deleted' };
    }
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: decision.body,
        ContentType: decision.contentType,
        ContentEncoding: decision.contentEncoding,
        Metadata: decision.metadata,
        ...ifMatch,
      }),
    );
    return { outcome: 'put', ...(put.VersionId ? { versionId: put.VersionId } : {}) };
  } catch (err) {
    if (isMissing(err)) return { outcome: 'gone' };
    if (isContended(err)) return { outcome: 'contended' };
    throw err;
  }
}

/**
 * Applies `decide` to the object's current bytes and writes the result only if the object is still
 * the one read. `decide` returns the decision and, optionally, a detail (what it removed) reported
 * for the attempt that wrote.
 */
export async function rewriteIfUnchanged<T = undefined>(
  s3: S3Client,
  bucket: string,
  key: string,
  decide: (body: Buffer) => Promise<{ decision: RewriteDecision; detail?: T }> | { decision: RewriteDecision; detail?: T },
  maxAttempts = 8,
): Promise<RewriteOutcome<T>> {
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const current = await readCurrent(s3, bucket, key);
    if (current === null) return { outcome: 'gone', retries: attempt, detail: undefined };
    const { decision, detail } = await decide(current.body);
    if (decision.kind === 'keep') return { outcome: 'kept', retries: attempt, detail };
    const written = await writeDecision(s3, bucket, key, decision, current.etag);
    if (written.outcome === 'gone') return { outcome: 'gone', retries: attempt, detail: undefined };
    if (written.outcome !== 'contended') return { outcome: written.outcome, retries: attempt, detail, ...(written.versionId ? { versionId: written.versionId } : {}) };
  }
  throw new RewriteContendedError(key, maxAttempts);
}
