/**
 * Every price and outside fact the scale bench's cost model uses, one named constant each, with
 * where it comes from. us-east-1, on-demand list prices as published when this was written; free
 * tiers left out. Check current pricing before relying on a figure.
 */

/** https://aws.amazon.com/s3/pricing/ (S3 Standard, requests and data retrievals). */
export const S3 = {
  /** PUT, COPY, POST, LIST requests: $0.005 per 1,000 (a multipart upload's every part is one). */
  putOrList: 0.005 / 1000,
  /** GET, SELECT and all other requests: $0.0004 per 1,000. */
  get: 0.0004 / 1000,
  /** DELETE requests are free. */
  delete: 0,
  /** Storage, first 50 TB: $0.023 per GB-month. */
  gbMonth: 0.023,
} as const;

/**
 * https://aws.amazon.com/athena/pricing/ (SQL queries): $5 per TB of data scanned, rounded up to
 * the nearest megabyte, with a 10 MB minimum per query; DDL and failed queries are free. Athena
 * reads S3 with the caller's requests, billed at S3's rates on top (the same page, and S3's).
 */
export const ATHENA = {
  perByteScanned: 5 / 1e12,
  minimumBytesPerQuery: 10 * 1024 * 1024,
} as const;

/** https://aws.amazon.com/lambda/pricing/ (x86, us-east-1): $0.0000166667 per GB-second, $0.20 per million requests. */
export const LAMBDA = {
  gbSecond: 0.0000166667,
  request: 0.2 / 1e6,
} as const;

/**
 * https://aws.amazon.com/dynamodb/pricing/on-demand/ : export to S3 (`ExportTableToPointInTime`,
 * full export) $0.10 per GB of table size at the export's point in time; on-demand write request
 * units $0.625 per million (after the November 2024 reduction), read request units $0.125 per
 * million. Export needs point-in-time recovery ($0.20 per GB-month, a standing cost of the table,
 * not of a run: left out).
 */
export const DYNAMODB = {
  exportPerGb: 0.1,
  writeRequestUnit: 0.625 / 1e6,
  readRequestUnit: 0.125 / 1e6,
} as const;

/**
 * Facts about the engines and formats the model needs, with their sources.
 * - Athena writes Iceberg as Parquet compressed with ZSTD by default (Athena engine 3:
 *   https://docs.aws.amazon.com/athena/latest/ug/compression-support-iceberg.html): the model uses
 *   the ZSTD size measured on the engine's own Parquet files.
 * - Iceberg's `write.target-file-size-bytes` defaults to 512 MB
 *   (https://iceberg.apache.org/docs/latest/configuration/): what `OPTIMIZE … BIN_PACK` packs a
 *   partition's files to.
 * - Parquet row groups of 128 MB (Iceberg's `write.parquet.row-group-size-bytes` default, same page).
 * - Multipart uploads in parts of 16 MB (Trino's S3 file system `s3.streaming.part-size` default):
 *   one PUT per part plus the create and complete requests. An assumption about Athena, which does
 *   not publish its part size.
 */
export const FORMATS = {
  targetFileBytes: 512 * 1024 * 1024,
  rowGroupBytes: 128 * 1024 * 1024,
  multipartPartBytes: 16 * 1024 * 1024,
  /** Requests a query or an Iceberg commit spends on metadata (metadata.json, manifest list, manifests): an assumption. */
  icebergMetadataGetsPerQuery: 4,
  icebergMetadataPutsPerCommit: 4,
} as const;
