/**
 * Replaces `@aws-sdk/client-kinesis` in Lambda bundles only (an esbuild alias, see
 * handler-asset.ts). The Lambda receives its records from the event source mapping and never
 * calls Kinesis; the shared client factory still builds a Kinesis client for the CLI. This stand-in
 * keeps that construction cheap and fails loudly if the runtime ever sends a Kinesis command.
 */
export class KinesisClient {
  send(): never {
    throw new Error('the Lambda bundle carries no Kinesis client: the function reads Kinesis only through its event source mapping');
  }
  destroy(): void {}
}
