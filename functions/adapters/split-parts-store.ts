/**
 * Where the parts of split Aurora DSQL records wait for each other, outside the Lambda: a shard can
 * move to another invocation, and the parts of one record arrive on any shard (Aurora DSQL user
 * guide, "Understanding CDC records", "Handling oversized records",
 * https://docs.aws.amazon.com/aurora-dsql/latest/userguide/cdc-record-format.html#cdc-oversized-records).
 *
 * - **One DynamoDB item per chunk id**, in the status table under its own partition
 *   `<pipeline>#dsql-parts` (sort key `chunk#<chunk_id>`), so status listings never see it. It holds
 *   when the wait opened and closes (`firstSeenMs`, `deadlineMs`, set once), the TTL `__expiresAt`,
 *   a reference to the main record (`main`) and one attribute per fragment (`p<index>`), each
 *   `{k: S3 key, n: bytes, s: shard, q: sequence}`. Every part is one `UpdateItem`; a fragment's
 *   condition admits only the same text for its slot (`attribute_not_exists(#p) OR #p.k = :k`): a
 *   redelivery is a no-op, a different text for one index is refused (`conflict`). The first main
 *   record stays (a redelivered one may be serialized anew). `ReturnValues: ALL_NEW`
 *   tells the writer what the set holds after its own part, so whichever invocation adds the last
 *   part sees the set complete.
 * - **The texts in S3**, never in the item: a fragment can be close to 10 MiB and an item holds
 *   400 KB. Keys are content-addressed, `<raw prefix>dsql-parts/<chunk digest>/<slot>-<text digest>.json`,
 *   so a redelivered part rewrites the same object and two texts for one slot never overwrite
 *   each other. The item stays small: at most {@link MAX_SPLIT_FRAGMENTS} parts of ~60 bytes.
 * - **Expiry**: `expired` reads the one partition (a Query, the ingest's only one, limited by IAM
 *   to that partition) for sets past their deadline that are neither done nor claimed; `claim`
 *   takes a lease so one sweeper quarantines a set, and `markDone` ends it (after the quarantine
 *   object has landed, so a crash in between quarantines it again rather than never).
 */
import { createHash } from 'node:crypto';
import { type AttributeValue, ConditionalCheckFailedException, type DynamoDBClient, GetItemCommand, QueryCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { EXPIRES_AT_ATTRIBUTE } from '../telemetry/contract.js';
import { STATUS_KEY } from '../telemetry/status-layout.js';

/** How many fragments one chunk may have here: more is `fragment-too-large` (the item stays far below 400 KB). */
export const MAX_SPLIT_FRAGMENTS = 1_000;
/** How long a set's item and objects are kept past its deadline (a late redelivery then finds it done). */
export const SPLIT_RETENTION_DAYS = 7;

/** Where one stored part came from and where its text is. */
export interface StoredPart {
  /** The S3 key of its text. */
  readonly ref: string;
  /** Its text's UTF-8 bytes. */
  readonly bytes: number;
  readonly shard: string;
  readonly sequence: string;
}

/** What is known of one chunk id. */
export interface ChunkState {
  readonly chunkId: string;
  readonly firstSeenMs: number;
  readonly deadlineMs: number;
  /** The main record, once it has arrived; `table` is the source table it names. */
  readonly main: (StoredPart & { readonly table: string | null }) | null;
  /** Fragments by index. */
  readonly parts: ReadonlyMap<number, StoredPart>;
  /** Set once the record was assembled or quarantined. */
  readonly doneMs: number | null;
}

export type PutOutcome = { readonly ok: true; readonly state: ChunkState } | { readonly ok: false; readonly conflict: true };

/** Where the part came from, and when. */
export interface PartOrigin {
  readonly shard: string;
  readonly sequence: string;
  readonly nowMs: number;
  /** When the set's wait closes, if this part opens it. */
  readonly deadlineMs: number;
}

/** What the ingest needs of the pending-parts store (tests use an in-memory one). */
export interface SplitPartsStore {
  /**
   * Stores the main record; a main record already held stays (a redelivery may be serialized anew,
   * e.g. its top-level processing times): it never conflicts, and the CRC32C guards the images.
   */
  putMain(chunkId: string, text: string, table: string | null, origin: PartOrigin): Promise<PutOutcome>;
  putFragment(chunkId: string, index: number, data: string, origin: PartOrigin): Promise<PutOutcome>;
  get(chunkId: string): Promise<ChunkState | null>;
  /** The text of a stored part. */
  read(ref: string): Promise<string>;
  /** Sets past their deadline, neither done nor claimed, at most `limit`. */
  expired(nowMs: number, limit: number): Promise<ChunkState[]>;
  /** Takes the set for `leaseMs` to quarantine it; false when it is done or another holds it. */
  claim(chunkId: string, nowMs: number, leaseMs: number): Promise<boolean>;
  markDone(chunkId: string, nowMs: number): Promise<void>;
}

const digest = (text: string): string => createHash('sha256').update(text).digest('base64url').slice(0, 22);
const PART = /^p\d{1,4}$/;

export class DynamoSplitPartsStore implements SplitPartsStore {
  private readonly partition: string;

  constructor(
    private readonly dynamodb: DynamoDBClient,
    private readonly s3: S3Client,
    private readonly tableName: string,
    pipeline: string,
    private readonly bucket: string,
    private readonly prefix: string,
  ) {
    this.partition = `${pipeline}#dsql-parts`;
  }

  private key(chunkId: string): Record<string, AttributeValue> {
    return { [STATUS_KEY.partition]: { S: this.partition }, [STATUS_KEY.row]: { S: `chunk#${chunkId}` } };
  }

  private async putText(chunkId: string, slot: string, text: string): Promise<{ ref: string; bytes: number }> {
    const body = Buffer.from(text, 'utf8');
    const ref = `${this.prefix}${digest(chunkId)}/${slot}-${digest(text)}.json`;
    await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: ref, Body: body, ContentType: 'application/json' }));
    return { ref, bytes: body.length };
  }

  /** Sets the slot if it is free; `exclusive`: a different text for a held slot is a conflict (else the first one simply stays). */
  private async putSlot(chunkId: string, slot: string, value: Record<string, AttributeValue>, ref: string, origin: PartOrigin, exclusive: boolean): Promise<PutOutcome> {
    try {
      const res = await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(chunkId),
          UpdateExpression: 'SET #f = if_not_exists(#f, :now), #d = if_not_exists(#d, :dl), #x = if_not_exists(#x, :x), #p = if_not_exists(#p, :part)',
          ...(exclusive ? { ConditionExpression: 'attribute_not_exists(#p) OR #p.#k = :k' } : {}),
          ExpressionAttributeNames: { '#f': 'firstSeenMs', '#d': 'deadlineMs', '#x': EXPIRES_AT_ATTRIBUTE, '#p': slot, ...(exclusive ? { '#k': 'k' } : {}) },
          ExpressionAttributeValues: {
            ':now': { N: String(origin.nowMs) },
            ':dl': { N: String(origin.deadlineMs) },
            ':x': { N: String(Math.floor(origin.deadlineMs / 1000) + SPLIT_RETENTION_DAYS * 86_400) },
            ':part': { M: value },
            ...(exclusive ? { ':k': { S: ref } } : {}),
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return { ok: true, state: stateOf(chunkId, res.Attributes ?? {}) };
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return { ok: false, conflict: true };
      throw err;
    }
  }

  async putMain(chunkId: string, text: string, table: string | null, origin: PartOrigin): Promise<PutOutcome> {
    const { ref, bytes } = await this.putText(chunkId, 'main', text);
    return this.putSlot(chunkId, 'main', { ...partValue(ref, bytes, origin), t: table === null ? { NULL: true } : { S: table } }, ref, origin, false);
  }

  async putFragment(chunkId: string, index: number, data: string, origin: PartOrigin): Promise<PutOutcome> {
    if (!Number.isSafeInteger(index) || index < 0 || index >= MAX_SPLIT_FRAGMENTS) throw new RangeError(`fragment index ${index} is outside 0..${MAX_SPLIT_FRAGMENTS - 1}`);
    const { ref, bytes } = await this.putText(chunkId, `p${index}`, data);
    return this.putSlot(chunkId, `p${index}`, partValue(ref, bytes, origin), ref, origin, true);
  }

  async get(chunkId: string): Promise<ChunkState | null> {
    const res = await this.dynamodb.send(new GetItemCommand({ TableName: this.tableName, Key: this.key(chunkId), ConsistentRead: true }));
    return res.Item ? stateOf(chunkId, res.Item) : null;
  }

  async read(ref: string): Promise<string> {
    const res = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: ref }));
    if (!res.Body) throw new Error(`pending part ${ref} has no body`);
    return res.Body.transformToString('utf-8');
  }

  async expired(nowMs: number, limit: number): Promise<ChunkState[]> {
    const out: ChunkState[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.dynamodb.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: '#pk = :pk',
          FilterExpression: '#d <= :now AND attribute_not_exists(#done) AND (attribute_not_exists(#c) OR #c < :now)',
          ExpressionAttributeNames: { '#pk': STATUS_KEY.partition, '#d': 'deadlineMs', '#done': 'doneMs', '#c': 'claimUntil' },
          ExpressionAttributeValues: { ':pk': { S: this.partition }, ':now': { N: String(nowMs) } },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of page.Items ?? []) {
        const sk = item[STATUS_KEY.row]?.S ?? '';
        if (sk.startsWith('chunk#') && out.length < limit) out.push(stateOf(sk.slice('chunk#'.length), item));
      }
      start = page.LastEvaluatedKey;
    } while (start && out.length < limit);
    return out;
  }

  async claim(chunkId: string, nowMs: number, leaseMs: number): Promise<boolean> {
    try {
      await this.dynamodb.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: this.key(chunkId),
          UpdateExpression: 'SET #c = :until',
          ConditionExpression: 'attribute_exists(#d) AND attribute_not_exists(#done) AND (attribute_not_exists(#c) OR #c < :now)',
          ExpressionAttributeNames: { '#c': 'claimUntil', '#d': 'deadlineMs', '#done': 'doneMs' },
          ExpressionAttributeValues: { ':until': { N: String(nowMs + leaseMs) }, ':now': { N: String(nowMs) } },
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  }

  async markDone(chunkId: string, nowMs: number): Promise<void> {
    await this.dynamodb.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: this.key(chunkId),
        UpdateExpression: 'SET #done = if_not_exists(#done, :now)',
        ConditionExpression: 'attribute_exists(#d)',
        ExpressionAttributeNames: { '#done': 'doneMs', '#d': 'deadlineMs' },
        ExpressionAttributeValues: { ':now': { N: String(nowMs) } },
      }),
    );
  }
}

function partValue(ref: string, bytes: number, origin: PartOrigin): Record<string, AttributeValue> {
  return { k: { S: ref }, n: { N: String(bytes) }, s: { S: origin.shard }, q: { S: origin.sequence } };
}

function storedPart(v: AttributeValue | undefined): StoredPart | null {
  const m = v?.M;
  if (!m?.k?.S || !m.n?.N) return null;
  return { ref: m.k.S, bytes: Number(m.n.N), shard: m.s?.S ?? '', sequence: m.q?.S ?? '' };
}

function stateOf(chunkId: string, item: Record<string, AttributeValue>): ChunkState {
  const parts = new Map<number, StoredPart>();
  for (const [name, value] of Object.entries(item)) {
    if (!PART.test(name)) continue;
    const part = storedPart(value);
    if (part) parts.set(Number(name.slice(1)), part);
  }
  const main = storedPart(item.main);
  const table = item.main?.M?.t?.S ?? null;
  return {
    chunkId,
    firstSeenMs: Number(item.firstSeenMs?.N ?? 0),
    deadlineMs: Number(item.deadlineMs?.N ?? 0),
    main: main ? { ...main, table } : null,
    parts,
    doneMs: item.doneMs?.N === undefined ? null : Number(item.doneMs.N),
  };
}
