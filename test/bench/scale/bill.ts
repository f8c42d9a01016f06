/**
 * A bill of requests, bytes and compute, priced at prices.ts's list prices. Every job of the cost
 * model adds to one: Athena queries (bytes scanned each, billed at least 10 MB), S3 requests (a
 * multipart upload's parts each a PUT), Lambda GB-seconds and invocations, DynamoDB export GB and
 * request units.
 *
 *   const bill = new Bill();
 *   bill.query(3e12);                       // one Athena query scanning 3 TB
 *   bill.parquetRead(3e12, 24_000, 5);       // … and its GETs: a footer per file, a range per row group and column
 *   bill.dollars().total
 */
import { ATHENA, DYNAMODB, FORMATS, LAMBDA, S3 } from './prices.js';

export interface Dollars {
  readonly athena: number;
  readonly s3: number;
  readonly lambdaCompute: number;
  readonly lambdaRequests: number;
  readonly dynamodbExport: number;
  readonly dynamodbRequests: number;
  /** S3 requests, Lambda requests and DynamoDB request units: what "cost in requests" means here. */
  readonly requests: number;
  readonly total: number;
}

export class Bill {
  readonly queries: number[] = [];
  put = 0;
  get = 0;
  list = 0;
  lambdaGbSeconds = 0;
  lambdaRequests = 0;
  exportGb = 0;
  wru = 0;
  rru = 0;

  /** One Athena query scanning `bytes`. */
  query(bytes: number): this {
    this.queries.push(bytes);
    return this;
  }

  /** GETs of an Iceberg read: its metadata, each file's footer, then one range per row group and column read. */
  parquetRead(bytesOfFiles: number, files: number, columns: number): this {
    this.get += FORMATS.icebergMetadataGetsPerQuery + Math.ceil(files) + Math.ceil(bytesOfFiles / FORMATS.rowGroupBytes) * columns;
    return this;
  }

  /** PUTs of `files` files holding `bytes` in all: one each, or a multipart upload's parts plus its create and complete. */
  write(bytes: number, files: number): this {
    if (files <= 0) return this;
    const each = bytes / files;
    this.put += files * (each <= FORMATS.multipartPartBytes ? 1 : Math.ceil(each / FORMATS.multipartPartBytes) + 2);
    return this;
  }

  /** An Iceberg commit: metadata written (metadata.json, manifest list, manifests). */
  commit(): this {
    this.put += FORMATS.icebergMetadataPutsPerCommit;
    return this;
  }

  lambda(invocations: number, cpuSeconds: number, memoryMb: number): this {
    this.lambdaRequests += invocations;
    this.lambdaGbSeconds += cpuSeconds * (memoryMb / 1024);
    return this;
  }

  add(other: Bill): this {
    this.queries.push(...other.queries);
    this.put += other.put;
    this.get += other.get;
    this.list += other.list;
    this.lambdaGbSeconds += other.lambdaGbSeconds;
    this.lambdaRequests += other.lambdaRequests;
    this.exportGb += other.exportGb;
    this.wru += other.wru;
    this.rru += other.rru;
    return this;
  }

  /** Bytes scanned in all, before the per-query minimum. */
  get athenaBytes(): number {
    return this.queries.reduce((n, b) => n + b, 0);
  }

  /** Bytes Athena bills: each query rounded up to a megabyte, at least 10 MB. */
  get athenaBilledBytes(): number {
    const mb = 1024 * 1024;
    return this.queries.reduce((n, b) => n + Math.max(ATHENA.minimumBytesPerQuery, Math.ceil(b / mb) * mb), 0);
  }

  dollars(): Dollars {
    const athena = this.athenaBilledBytes * ATHENA.perByteScanned;
    const s3 = (this.put + this.list) * S3.putOrList + this.get * S3.get;
    const lambdaCompute = this.lambdaGbSeconds * LAMBDA.gbSecond;
    const lambdaRequests = this.lambdaRequests * LAMBDA.request;
    const dynamodbExport = this.exportGb * DYNAMODB.exportPerGb;
    const dynamodbRequests = this.wru * DYNAMODB.writeRequestUnit + this.rru * DYNAMODB.readRequestUnit;
    const requests = s3 + lambdaRequests + dynamodbRequests;
    return { athena, s3, lambdaCompute, lambdaRequests, dynamodbExport, dynamodbRequests, requests, total: athena + lambdaCompute + dynamodbExport + requests };
  }
}
