/**
 * Replaces `@smithy/core/event-streams` in Lambda bundles only (an esbuild alias, see
 * handler-asset.ts). Of the operations of S3 and DynamoDB only S3's SelectObjectContent streams
 * events; the Lambda sends PutObject and GetObject to S3, plain request/response operations. The S3 client still wires an event-stream marshaller
 * into its config at construction (`resolveEventStreamSerdeConfig`), so that part keeps the
 * original's exact behaviour; the marshaller and the serde fail loudly if an operation ever needs
 * them. The CLI and tests keep the real module. Saves about 19 KB of the minified bundle.
 */

const UNAVAILABLE = 'the Lambda bundle carries no AWS event-stream codec: it sends no event-stream operation (S3 SelectObjectContent)';

interface EventStreamSerdeInput {
  readonly eventStreamSerdeProvider: (input: never) => unknown;
}

/** The same as the original: the client config gets `eventStreamMarshaller` from its provider. */
export const resolveEventStreamSerdeConfig = <T extends EventStreamSerdeInput>(input: T): T & { eventStreamMarshaller: unknown } =>
  Object.assign(input, { eventStreamMarshaller: input.eventStreamSerdeProvider(input as never) });

/** A marshaller that refuses to serialize or deserialize an event stream. */
class NoEventStreamMarshaller {
  serialize(): never {
    throw new Error(UNAVAILABLE);
  }
  deserialize(): never {
    throw new Error(UNAVAILABLE);
  }
}

/** The S3 client's default provider: called once per client, at construction. */
export const eventStreamSerdeProvider = (): NoEventStreamMarshaller => new NoEventStreamMarshaller();

/** Loaded by a protocol only to (de)serialize an event-stream member. */
export class EventStreamSerde {
  constructor() {
    throw new Error(UNAVAILABLE);
  }
}
