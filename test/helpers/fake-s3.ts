/**
 * An in-memory, versioned S3 behind aws-sdk-client-mock: enough of Put/Get/Head/List/ListVersions/
 * Delete for the raw reader, replay and erase unit tests, with a request log so tests can assert
 * what was read (HEAD before GET) without a network.
 */
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListObjectVersionsCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';

interface Version {
  id: string;
  body: Uint8Array;
  metadata: Record<string, string>;
  modified: Date;
}

export interface FakeS3 {
  readonly client: S3Client;
  /** Latest body of a key, or undefined. */
  get(key: string): Uint8Array | undefined;
  put(key: string, body: Uint8Array | string, metadata?: Record<string, string>): void;
  versions(key: string): readonly Version[];
  keys(): string[];
  /** Commands sent, as `Get key`, `Head key`, `List prefix`, … */
  readonly calls: string[];
  /** Runs before every PUT and unversioned DELETE (then If-Match is checked): a concurrent writer's hook. */
  onBeforeWrite(hook: ((command: 'Put' | 'Delete', key: string) => void) | undefined): void;
  restore(): void;
}

class NoSuchKey extends Error {
  override name = 'NoSuchKey';
  $metadata = { httpStatusCode: 404 };
}

/** What S3 answers a conditional write whose `If-Match` names another ETag than the current one. */
class PreconditionFailed extends Error {
  override name = 'PreconditionFailed';
  $metadata = { httpStatusCode: 412 };
}

/** A version's ETag: its id, quoted (S3 quotes ETags too). */
const etagOf = (id: string) => `"${id}"`;

/**
 * `brokenDelimiter`: answer delimited listings with nothing, as s3rver does for nested keys.
 * `pageSize`: keys per ListObjectsV2 page (S3's is 1,000), with continuation tokens.
 */
export function fakeS3(options: { brokenDelimiter?: boolean; pageSize?: number } = {}): FakeS3 {
  const objects = new Map<string, Version[]>();
  const calls: string[] = [];
  let seq = 0;
  const client = new S3Client({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const mock = mockClient(client);
  const latest = (key: string, versionId?: string) => {
    const list = objects.get(key) ?? [];
    const v = versionId ? list.find((x) => x.id === versionId) : list[list.length - 1];
    if (!v) throw new NoSuchKey(`no such key ${key}`);
    return v;
  };
  const put = (key: string, body: Uint8Array | string, metadata: Record<string, string> = {}) => {
    const list = objects.get(key) ?? [];
    list.push({ id: `v${++seq}`, body: typeof body === 'string' ? Buffer.from(body) : Buffer.from(body), metadata, modified: new Date() });
    objects.set(key, list);
  };
  // A conditional request (If-Match) succeeds only against the key's current ETag, as S3's does.
  const checkIfMatch = (key: string, ifMatch: string | undefined) => {
    if (ifMatch === undefined) return;
    const current = objects.get(key)?.at(-1);
    if (!current) throw new NoSuchKey(`no such key ${key}`);
    if (ifMatch !== '*' && ifMatch !== etagOf(current.id)) throw new PreconditionFailed(`If-Match ${ifMatch} is not the current ETag of ${key}`);
  };
  /** Runs before each PUT and DELETE: lets a test change an object between a read and its rewrite. */
  let beforeWrite: ((command: 'Put' | 'Delete', key: string) => void) | undefined;
  mock.on(PutObjectCommand).callsFake((input) => {
    calls.push(`Put ${input.Key}`);
    beforeWrite?.('Put', input.Key);
    checkIfMatch(input.Key, input.IfMatch);
    put(input.Key, input.Body as Uint8Array, input.Metadata ?? {});
    const id = objects.get(input.Key)?.at(-1)?.id ?? '';
    return { VersionId: id, ETag: etagOf(id) };
  });
  mock.on(GetObjectCommand).callsFake((input) => {
    calls.push(`Get ${input.Key}`);
    const v = latest(input.Key, input.VersionId);
    return { Body: { transformToByteArray: async () => v.body }, Metadata: v.metadata, VersionId: v.id, ETag: etagOf(v.id) };
  });
  mock.on(HeadObjectCommand).callsFake((input) => {
    calls.push(`Head ${input.Key}`);
    const v = latest(input.Key, input.VersionId);
    return { Metadata: v.metadata, ContentLength: v.body.length, VersionId: v.id, ETag: etagOf(v.id) };
  });
  mock.on(DeleteObjectCommand).callsFake((input) => {
    calls.push(`Delete ${input.Key} ${input.VersionId ?? ''}`.trim());
    if (!input.VersionId) {
      beforeWrite?.('Delete', input.Key);
      checkIfMatch(input.Key, input.IfMatch);
    }
    const list = objects.get(input.Key) ?? [];
    const kept = input.VersionId ? list.filter((v) => v.id !== input.VersionId) : [];
    if (kept.length > 0) objects.set(input.Key, kept);
    else objects.delete(input.Key);
    return {};
  });
  mock.on(DeleteObjectsCommand).callsFake((input) => {
    const keys = ((input.Delete?.Objects ?? []) as { Key?: string }[]).map((o) => o.Key ?? '');
    calls.push(`DeleteMany ${keys.length}`);
    for (const key of keys) objects.delete(key);
    return input.Delete?.Quiet ? {} : { Deleted: keys.map((Key: string) => ({ Key })) };
  });
  const listing = (prefix: string) => [...objects.keys()].filter((k) => k.startsWith(prefix)).sort();
  mock.on(ListObjectsV2Command).callsFake((input) => {
    const prefix = input.Prefix ?? '';
    calls.push(`List ${prefix}`);
    const keys = listing(prefix);
    if (input.Delimiter && options.brokenDelimiter) return { IsTruncated: false };
    if (input.Delimiter) {
      const prefixes = new Set<string>();
      const contents: { Key: string; Size: number }[] = [];
      for (const k of keys) {
        const rest = k.slice(prefix.length);
        const at = rest.indexOf(input.Delimiter);
        if (at >= 0) prefixes.add(prefix + rest.slice(0, at + 1));
        else contents.push({ Key: k, Size: latest(k).body.length });
      }
      return { Contents: contents, CommonPrefixes: [...prefixes].map((p) => ({ Prefix: p })), IsTruncated: false };
    }
    const from = input.ContinuationToken ? Number(input.ContinuationToken) : 0;
    const size = Math.min(options.pageSize ?? 1000, input.MaxKeys ?? 1000);
    const page = keys.slice(from, from + size);
    const truncated = from + size < keys.length;
    return {
      Contents: page.map((k) => ({ Key: k, Size: latest(k).body.length, LastModified: latest(k).modified })),
      IsTruncated: truncated,
      ...(truncated ? { NextContinuationToken: String(from + size) } : {}),
    };
  });
  mock.on(ListObjectVersionsCommand).callsFake((input) => {
    calls.push(`Versions ${input.Prefix ?? ''}`);
    const versions = listing(input.Prefix ?? '').flatMap((k) => {
      const list = objects.get(k) ?? [];
      return list.map((v, i) => ({ Key: k, VersionId: v.id, IsLatest: i === list.length - 1, Size: v.body.length }));
    });
    return { Versions: versions, IsTruncated: false };
  });
  return {
    client,
    get: (key) => objects.get(key)?.at(-1)?.body,
    put,
    versions: (key) => objects.get(key) ?? [],
    keys: () => listing(''),
    calls,
    onBeforeWrite: (hook) => {
      beforeWrite = hook;
    },
    restore: () => mock.restore(),
  };
}
