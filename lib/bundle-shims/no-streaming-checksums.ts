/**
 * Replaces the SDK's streaming-body checksum helpers in Lambda bundles only (see
 * `BUNDLE_REPLACEMENTS` in handler-asset.ts): `getAwsChunkedEncodingStream`, which frames a
 * streaming request body as `aws-chunked` with a checksum trailer, and `createBufferedReadable`,
 * which re-chunks that stream first. S3's flexible-checksums middleware calls them only when it
 * computes a request checksum and the body is a stream. Neither happens in the Lambda: its S3 client
 * computes checksums only for operations that require one (functions/commons/clients.ts
 * `S3_CHECKSUMS`), which it never sends, and every body tidemark's functions send is a string or a
 * Buffer. About 2.2 KB with their web-stream twins; reaching one fails loudly.
 */

const unavailable = (helper: string): Error =>
  new Error(`the Lambda bundle carries no ${helper}: it sends no streaming request body with a flexible checksum`);

export function getAwsChunkedEncodingStream(_stream: unknown, _options: unknown): never {
  throw unavailable('aws-chunked encoder');
}

export function createBufferedReadable(_upstream: unknown, _size: number, _logger?: unknown): never {
  throw unavailable('stream re-chunker');
}
