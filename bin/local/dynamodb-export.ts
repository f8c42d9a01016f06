/**
 * DynamoDB's export to S3, for the local runner: DynamoDB Local has no ExportTableToPointInTime, so
 * the Tasks `arn:aws:states:::aws-sdk:dynamodb:exportTableToPointInTime` and `…:describeExport` run
 * here, writing what DynamoDB writes, in its documented layout ("DynamoDB table export output
 * format", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/S3DataExport.Output.html):
 *
 *   <S3Prefix>/AWSDynamoDB/<ExportId>/_started                 empty, written first
 *   <S3Prefix>/AWSDynamoDB/<ExportId>/data/<id>.json.gz        one {"Item": {…DynamoDB JSON…}} per line
 *   <S3Prefix>/AWSDynamoDB/<ExportId>/manifest-files.json      JSON Lines: { itemCount, md5Checksum, etag, dataFileS3Key }
 *   <S3Prefix>/AWSDynamoDB/<ExportId>/manifest-summary.json    { version: '2020-06-30', exportArn, startTime, endTime, tableArn,
 *                                                               tableId, exportTime, s3Bucket, s3Prefix, s3SseAlgorithm,
 *                                                               s3SseKmsKeyId, manifestFilesS3Key, billedSizeBytes, itemCount,
 *                                                               outputFormat: 'DYNAMODB_JSON', exportType: 'FULL_EXPORT' }
 *   (and manifest-*.checksum beside them: their content is not documented; here the manifest's hex MD5)
 *
 * Keys in the manifests are full object keys (prefix included), `md5Checksum` the base64 MD5 of the
 * data file and `etag` its S3 ETag unquoted; the ExportId is `<14-digit ms time>-<8 hex>` and the
 * ExportArn `<TableArn>/export/<ExportId>`, as AWS's examples show. The table is read by a parallel
 * Scan (`segments` segments, consistent reads), each segment streaming its pages through gzip into
 * a temporary file that is uploaded and started afresh every `itemsPerFile` items: memory holds a
 * page per segment, never the table, and every segment writes at least one file (an empty one for
 * an empty segment, as DynamoDB does for an empty partition). It reads the table as it is when
 * scanned: locally there is no point in time (ExportTime is echoed, PITR is not required).
 *
 * The task returns `{ ExportDescription: { ExportArn, ExportStatus: 'COMPLETED', ExportManifest, … } }`
 * at once (AWS returns IN_PROGRESS and a definition polls describeExport, which here is COMPLETED
 * the first time). Timestamps are ISO-8601 text. Only FULL_EXPORT in DYNAMODB_JSON is written;
 * ION, INCREMENTAL_EXPORT and IncrementalExportSpecification are refused. Failures are named as the
 * SDK integration names them (`DynamoDb.TableNotFoundException`, `DynamoDb.ExportNotFoundException`).
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip, type Gzip } from 'node:zlib';
import { type AttributeValue, DescribeTableCommand, type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { JsonObject, JsonValue } from '../../functions/core/json.js';
import { invalidInput, LocalTaskError, unsupported } from './task-error.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export const DYNAMODB_EXPORT_TABLE = 'arn:aws:states:::aws-sdk:dynamodb:exportTableToPointInTime';
export const DYNAMODB_DESCRIBE_EXPORT = 'arn:aws:states:::aws-sdk:dynamodb:describeExport';
const TABLE_ARN = /^arn:aws[\w-]*:dynamodb:[^:]*:[^:]*:table\/([A-Za-z0-9_.-]{3,255})$/;

export interface DynamoDbExportOptions {
  /** Parallel Scan segments (files at least). @default 4 */
  readonly segments?: number;
  /** Items per data file before the next one is started. @default 100000 */
  readonly itemsPerFile?: number;
  /** Where the data files are staged. @default os.tmpdir() */
  readonly tempRoot?: string;
  /** The clock. @default () => new Date() */
  readonly now?: () => Date;
}

/** One line of manifest-files.json. */
export interface ExportDataFile {
  readonly itemCount: number;
  readonly md5Checksum: string;
  readonly etag: string;
  readonly dataFileS3Key: string;
}

/** Refuses, when the definition is localized, the literal parameters an export cannot honour here. */
export function checkExportTask(name: string, state: Json, problems: string[]): void {
  const p = isObject(state.Parameters) ? state.Parameters : {};
  if (p.ExportFormat !== undefined && p.ExportFormat !== 'DYNAMODB_JSON') problems.push(`state "${name}": ExportFormat ${String(p.ExportFormat)} is not supported locally (DYNAMODB_JSON only)`);
  if (p.ExportType !== undefined && p.ExportType !== 'FULL_EXPORT') problems.push(`state "${name}": ExportType ${String(p.ExportType)} is not supported locally (FULL_EXPORT only)`);
  if (p.IncrementalExportSpecification !== undefined || p['IncrementalExportSpecification.$'] !== undefined) problems.push(`state "${name}": IncrementalExportSpecification is not supported locally`);
}

/** A DynamoDB attribute value as DynamoDB JSON: the SDK's shape with binaries as base64. */
export function dynamoDbJson(v: AttributeValue): JsonValue {
  if (v.B !== undefined) return { B: Buffer.from(v.B).toString('base64') };
  if (v.BS !== undefined) return { BS: v.BS.map((b) => Buffer.from(b).toString('base64')) };
  if (v.L !== undefined) return { L: v.L.map(dynamoDbJson) };
  if (v.M !== undefined) return { M: itemJson(v.M) };
  const { $unknown: _, ...rest } = v as AttributeValue & { $unknown?: unknown };
  return rest as JsonValue;
}

const itemJson = (item: Record<string, AttributeValue>): JsonObject => {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(item)) Object.defineProperty(out, k, { value: dynamoDbJson(v), enumerable: true, writable: true, configurable: true });
  return out;
};

/** A data file being written: lines through gzip into a temporary file. */
class DataFile {
  items = 0;
  private readonly gzip: Gzip = createGzip();
  private readonly written: Promise<void>;
  constructor(readonly path: string) {
    this.written = pipeline(this.gzip, createWriteStream(path));
    this.written.catch(() => undefined);
  }
  async write(line: string): Promise<void> {
    this.items++;
    if (!this.gzip.write(line)) await Promise.race([once(this.gzip, 'drain'), this.written]);
  }
  async close(): Promise<void> {
    this.gzip.end();
    await this.written;
  }
}

async function md5Of(path: string): Promise<string> {
  const hash = createHash('md5');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('base64');
}

/** `bafybeiczss3yxay3o4abnabbb`: 26 base-32 characters, as the data files are named. */
const fileName = (): string => {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  return [...randomBytes(26)].map((b) => alphabet[b % 32]).join('');
};

const exportIdOf = (at: Date): string => `${String(at.getTime()).padStart(14, '0')}-${randomBytes(4).toString('hex')}`;

/** ExportTableToPointInTime's parameters, checked. */
interface ExportRequest {
  readonly tableArn: string;
  readonly table: string;
  readonly bucket: string;
  readonly prefix?: string;
  readonly exportTime?: string;
  readonly clientToken?: string;
  /** Echoed as given: S3BucketOwner, S3SseAlgorithm, S3SseKmsKeyId. */
  readonly echo: Readonly<Record<string, string>>;
}

/** ExportTime as given (ISO text, or epoch seconds as the API takes it) in ISO text. */
const timeText = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' ? new Date(v * 1000).toISOString() : undefined);

const validation = (message: string) => new LocalTaskError('DynamoDb.ValidationException', message);

function exportRequest(input: JsonValue): ExportRequest {
  const p = isObject(input) ? input : {};
  const tableArn = typeof p.TableArn === 'string' ? p.TableArn : '';
  const table = TABLE_ARN.exec(tableArn)?.[1];
  if (!table) throw validation(`TableArn must be a DynamoDB table ARN, got ${JSON.stringify(p.TableArn)}`);
  if (typeof p.S3Bucket !== 'string' || p.S3Bucket === '') throw validation('S3Bucket is required');
  if (p.S3Prefix !== undefined && typeof p.S3Prefix !== 'string') throw validation('S3Prefix must be a string');
  if (p.ExportFormat !== undefined && p.ExportFormat !== 'DYNAMODB_JSON') throw unsupported(`ExportFormat ${String(p.ExportFormat)} is not written locally (DYNAMODB_JSON only)`);
  if (p.ExportType !== undefined && p.ExportType !== 'FULL_EXPORT') throw unsupported(`ExportType ${String(p.ExportType)} is not written locally (FULL_EXPORT only)`);
  if (p.IncrementalExportSpecification !== undefined) throw unsupported('IncrementalExportSpecification is not supported locally');
  const exportTime = timeText(p.ExportTime);
  const echo: Record<string, string> = {};
  for (const k of ['S3BucketOwner', 'S3SseAlgorithm', 'S3SseKmsKeyId']) if (typeof p[k] === 'string') echo[k] = p[k];
  return {
    tableArn,
    table,
    bucket: p.S3Bucket,
    ...(typeof p.S3Prefix === 'string' ? { prefix: p.S3Prefix } : {}),
    ...(exportTime !== undefined ? { exportTime } : {}),
    ...(typeof p.ClientToken === 'string' ? { clientToken: p.ClientToken } : {}),
    echo,
  };
}

/** One export being written: where, and its staging directory. */
interface ExportJob {
  readonly request: ExportRequest;
  readonly id: string;
  readonly arn: string;
  /** `<prefix>/AWSDynamoDB/<id>/`. */
  readonly root: string;
  readonly dir: string;
  readonly start: Date;
  readonly tableId: string | undefined;
}

/** What the data files came to. */
interface Written {
  readonly files: readonly ExportDataFile[];
  readonly itemCount: number;
  readonly billedSizeBytes: number;
}

/** The export's description, as ExportTableToPointInTime and DescribeExport return it. */
function descriptionOf(job: ExportJob, end: Date, w: Written): JsonObject {
  const r = job.request;
  return {
    ExportArn: job.arn,
    ExportStatus: 'COMPLETED',
    StartTime: job.start.toISOString(),
    EndTime: end.toISOString(),
    ExportManifest: `${job.root}manifest-summary.json`,
    TableArn: r.tableArn,
    ...(job.tableId !== undefined ? { TableId: job.tableId } : {}),
    ExportTime: r.exportTime ?? job.start.toISOString(),
    ...(r.clientToken !== undefined ? { ClientToken: r.clientToken } : {}),
    S3Bucket: r.bucket,
    ...(r.echo.S3BucketOwner !== undefined ? { S3BucketOwner: r.echo.S3BucketOwner } : {}),
    ...(r.prefix !== undefined ? { S3Prefix: r.prefix } : {}),
    ...(r.echo.S3SseAlgorithm !== undefined ? { S3SseAlgorithm: r.echo.S3SseAlgorithm } : {}),
    ...(r.echo.S3SseKmsKeyId !== undefined ? { S3SseKmsKeyId: r.echo.S3SseKmsKeyId } : {}),
    ExportFormat: 'DYNAMODB_JSON',
    ExportType: 'FULL_EXPORT',
    BilledSizeBytes: w.billedSizeBytes,
    ItemCount: w.itemCount,
  };
}

/** manifest-summary.json's content (the documented example's fields, in its order). */
function summaryOf(job: ExportJob, end: Date, w: Written): string {
  const r = job.request;
  return JSON.stringify({
    version: '2020-06-30',
    exportArn: job.arn,
    startTime: job.start.toISOString(),
    endTime: end.toISOString(),
    tableArn: r.tableArn,
    tableId: job.tableId ?? null,
    exportTime: r.exportTime ?? job.start.toISOString(),
    s3Bucket: r.bucket,
    s3Prefix: r.prefix ?? null,
    s3SseAlgorithm: r.echo.S3SseAlgorithm ?? null,
    s3SseKmsKeyId: r.echo.S3SseKmsKeyId ?? null,
    manifestFilesS3Key: `${job.root}manifest-files.json`,
    billedSizeBytes: w.billedSizeBytes,
    itemCount: w.itemCount,
    outputFormat: 'DYNAMODB_JSON',
    exportType: 'FULL_EXPORT',
  });
}

/** The exports of one local run: runs them and answers describeExport for them. */
export class LocalDynamoDbExports {
  private readonly byArn = new Map<string, JsonObject>();
  private readonly byToken = new Map<string, string>();
  constructor(
    private readonly clients: { readonly dynamodb?: DynamoDBClient | undefined; readonly s3?: S3Client | undefined },
    private readonly o: DynamoDbExportOptions = {},
  ) {}

  /** ExportTableToPointInTime: writes the export and returns its description, COMPLETED. */
  async exportTable(input: JsonValue): Promise<JsonValue> {
    const request = exportRequest(input);
    const previous = request.clientToken !== undefined ? this.byArn.get(this.byToken.get(request.clientToken) ?? '') : undefined;
    if (previous) return { ExportDescription: previous };
    const now = this.o.now ?? (() => new Date());
    const start = now();
    const id = exportIdOf(start);
    const prefix = (request.prefix ?? '').replace(/\/+$/, '');
    const dir = mkdtempSync(join(this.o.tempRoot ?? tmpdir(), 'tidemark-export-'));
    let job: ExportJob | undefined;
    let written: Written;
    try {
      job = { request, id, arn: `${request.tableArn}/export/${id}`, root: `${prefix === '' ? '' : `${prefix}/`}AWSDynamoDB/${id}/`, dir, start, tableId: await this.tableId(request.table) };
      written = await this.writeData(job);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const manifestFiles = written.files.map((f) => `${JSON.stringify(f)}\n`).join('');
    await this.put(request.bucket, `${job.root}manifest-files.json`, manifestFiles);
    await this.put(request.bucket, `${job.root}manifest-files.checksum`, createHash('md5').update(manifestFiles).digest('hex'));
    const end = now();
    const summary = summaryOf(job, end, written);
    await this.put(request.bucket, `${job.root}manifest-summary.json`, summary);
    await this.put(request.bucket, `${job.root}manifest-summary.checksum`, createHash('md5').update(summary).digest('hex'));
    const description = descriptionOf(job, end, written);
    this.byArn.set(job.arn, description);
    if (request.clientToken !== undefined) this.byToken.set(request.clientToken, job.arn);
    return { ExportDescription: description };
  }

  private async tableId(table: string): Promise<string | undefined> {
    try {
      return (await this.dynamodb().send(new DescribeTableCommand({ TableName: table }))).Table?.TableId;
    } catch (err) {
      if ((err as Error).name === 'ResourceNotFoundException') throw new LocalTaskError('DynamoDb.TableNotFoundException', `table ${table} was not found`, { cause: err });
      throw err;
    }
  }

  /** `_started`, then every segment's data files, in parallel. */
  private async writeData(job: ExportJob): Promise<Written> {
    await this.put(job.request.bucket, `${job.root}_started`, '');
    const segments = Math.max(1, this.o.segments ?? 4);
    const results = await Promise.all(Array.from({ length: segments }, (_, i) => this.segment(job, i, segments)));
    const files = results.flatMap((r) => r.files);
    return { files, itemCount: files.reduce((n, f) => n + f.itemCount, 0), billedSizeBytes: results.reduce((n, r) => n + r.bytes, 0) };
  }

  /** DescribeExport of an export this run wrote. */
  describe(input: JsonValue): JsonValue {
    const arn = isObject(input) ? input.ExportArn : undefined;
    const description = typeof arn === 'string' ? this.byArn.get(arn) : undefined;
    if (!description) throw new LocalTaskError('DynamoDb.ExportNotFoundException', `export ${String(arn)} was not found`);
    return { ExportDescription: description };
  }

  /** One Scan segment, page by page, into data files of at most `itemsPerFile` items. */
  private async segment(job: ExportJob, segment: number, total: number): Promise<{ files: ExportDataFile[]; bytes: number }> {
    const dynamodb = this.dynamodb();
    const perFile = Math.max(1, this.o.itemsPerFile ?? 100_000);
    const files: ExportDataFile[] = [];
    let bytes = 0;
    let file = new DataFile(join(job.dir, `${segment}-0.json.gz`));
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await dynamodb.send(new ScanCommand({ TableName: job.request.table, Segment: segment, TotalSegments: total, ConsistentRead: true, ...(startKey ? { ExclusiveStartKey: startKey } : {}) }));
      for (const item of page.Items ?? []) {
        if (file.items >= perFile) {
          files.push(await this.upload(job, file));
          file = new DataFile(join(job.dir, `${segment}-${files.length}.json.gz`));
        }
        const line = `${JSON.stringify({ Item: itemJson(item) })}\n`;
        bytes += Buffer.byteLength(line);
        await file.write(line);
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    files.push(await this.upload(job, file));
    return { files, bytes };
  }

  private async upload(job: ExportJob, file: DataFile): Promise<ExportDataFile> {
    await file.close();
    const key = `${job.root}data/${fileName()}.json.gz`;
    const md5Checksum = await md5Of(file.path);
    const put = await this.s3().send(new PutObjectCommand({ Bucket: job.request.bucket, Key: key, Body: createReadStream(file.path), ContentLength: statSync(file.path).size, ContentType: 'application/gzip' }));
    rmSync(file.path, { force: true });
    return { itemCount: file.items, md5Checksum, etag: (put.ETag ?? '').replace(/"/g, ''), dataFileS3Key: key };
  }

  private async put(bucket: string, key: string, body: string): Promise<void> {
    await this.s3().send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentType: key.endsWith('.json') ? 'application/json' : 'text/plain' }));
  }

  private s3(): S3Client {
    if (!this.clients.s3) throw invalidInput('a DynamoDB export runs locally with options.s3');
    return this.clients.s3;
  }

  private dynamodb(): DynamoDBClient {
    if (!this.clients.dynamodb) throw invalidInput('a DynamoDB export runs locally with options.dynamodb');
    return this.clients.dynamodb;
  }
}
