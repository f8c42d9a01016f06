/**
 * Replaces the web-stream (`ReadableStream`) branches of the SDK's stream helpers in Lambda
 * bundles only (see `BUNDLE_REPLACEMENTS` in handler-asset.ts). Each node helper hands a web stream
 * to its browser twin and a node stream to its own code: in the Lambda every response body comes
 * from the node HTTP handler as a node `Readable` (an `IncomingMessage`, or a checksum `Duplex`
 * over one), and every request body tidemark sends is a string or a Buffer, so the web branches
 * never run. Reaching one fails loudly instead (about 2.5 KB saved). The CLI and tests keep the real
 * modules.
 */

const unavailable = (helper: string): Error =>
  new Error(`the Lambda bundle carries no web-stream ${helper}: the SDK got a ReadableStream, but the Lambda's bodies are node streams, strings or Buffers`);

/** `sdk-stream-mixin.browser`: the body mixin of a web `ReadableStream` response body. */
export const sdkStreamMixin = (_stream: unknown): never => {
  throw unavailable('body mixin');
};

/** `checksum/createChecksumStream.browser`: checksum validation over a web stream. */
export const createChecksumStream = (_init: unknown): never => {
  throw unavailable('checksum stream');
};
