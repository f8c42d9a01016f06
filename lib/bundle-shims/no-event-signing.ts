/**
 * Replaces `HeaderFormatter` of `@smithy/signature-v4` in Lambda bundles only (see
 * `BUNDLE_REPLACEMENTS` in handler-asset.ts): the binary header encoder of event-stream messages,
 * which `SignatureV4` builds at construction but calls only in `signMessage`, to sign each message
 * of an event stream. The Lambda sends no event-stream operation (its bundle carries no event-stream
 * codec either, lib/bundle-shims/no-event-streams.ts); requests are signed by `sign` alone. About
 * 2.3 KB; formatting fails loudly if ever reached.
 */
export class HeaderFormatter {
  format(): never {
    throw new Error('the Lambda bundle carries no event-stream message signing: it sends no event-stream operation');
  }
}
