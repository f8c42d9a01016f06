/**
 * The direct path: the DynamoDB requests the ingest sends per record (PutItem, UpdateItem, GetItem,
 * BatchGetItem) skip the SDK's per-request pipeline above the wire, and keep every part of it that
 * decides what goes on the wire or what happens on failure.
 *
 * Kept, the SDK's own code with the client's own configuration:
 * - the retry middleware and the client's retry strategy (standard, backoff with jitter, the
 *   retry quota, throttling and transient errors classified as the SDK classifies them, the
 *   `amz-sdk-invocation-id` and `amz-sdk-request` headers);
 * - the SigV4 signer of the client (its refreshing credentials), with the SDK's clock-skew
 *   correction from the `Date` of every response (`AwsSdkSigV4Signer`);
 * - the client's HTTP handler (keep-alive, timeouts) and stream collector;
 * - the endpoint, resolved by the SDK's endpoint rules from the client's configuration;
 * - every error response, deserialized by the client's protocol into the SDK's exception classes
 *   (`ConditionalCheckFailedException` with its `Item`, throttling, validation, unknown errors).
 *
 * Replaced, because the SDK does it again for every request with the same result:
 * - the middleware stack and its handler context, and the three `{...config}` copies per request;
 * - endpoint resolution: done once per client (tables are named, never ARNs here; an ARN, which is
 *   an endpoint parameter, goes the SDK's way);
 * - the schema serde of the request and of a successful response: the low-level client's input
 *   and output already are DynamoDB JSON, so `JSON.stringify` and `JSON.parse` give the same wire
 *   text and the same output object. Binary attributes (`B`, `BS`) are the one difference: an input
 *   holding a `Uint8Array` goes the SDK's way, and a response that may hold one is read by the
 *   client's protocol.
 *
 * Any other command, or a call with options or a callback, goes through the SDK's `send` unchanged.
 * Middleware added to the client's stack does not see the direct requests (tidemark adds none; to
 * observe every call, wrap `send`, as the bench's request counter does).
 * `npm run bench` (goal 6) measures it; test/unit/commons/dynamodb-direct.test.ts holds it to the
 * SDK's wire requests and outputs, and the whole integration suite runs on it against DynamoDB Local.
 */
import { BatchGetItemCommand, type DynamoDBClient, GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { AwsSdkSigV4Signer } from '@aws-sdk/core/httpAuthSchemes';
import { getEndpointFromInstructions } from '@smithy/core/endpoints';
import { HttpRequest, type HttpResponse } from '@smithy/core/protocols';
import { retryMiddleware } from '@smithy/core/retry';
import { operation } from '@smithy/core/schema';
import { asError } from '../core/errors.js';

/** The commands sent on the direct path, by class. */
const DIRECT: ReadonlySet<unknown> = new Set([PutItemCommand, UpdateItemCommand, GetItemCommand, BatchGetItemCommand]);

/** The static operation schema the SDK attaches to a command: `[9, namespace, name, traits, input, output]`. */
type OperationSchema = readonly [number, string, string, unknown, unknown, unknown];

interface DirectCommand {
  readonly input: Record<string, unknown>;
  readonly schema: OperationSchema;
}

type Output = Record<string, unknown> & { $metadata: Record<string, unknown> };
interface Attempt {
  readonly input: DirectCommand;
  readonly request: HttpRequest;
  readonly route: Route;
}
type Handler = (args: Attempt) => Promise<{ response: HttpResponse; output: Output }>;

/** The resolved configuration of a DynamoDB client, as far as the direct path reads it. */
interface ClientConfig {
  region: () => Promise<string>;
  requestHandler: { handle(request: HttpRequest, options?: object): Promise<{ response: HttpResponse }> };
  streamCollector: (body: unknown) => Promise<Uint8Array>;
  protocol: {
    deserializeResponse(operation: unknown, context: object, response: HttpResponse): Promise<unknown>;
    /** The `$metadata` the SDK gives an output (status, request ids). */
    deserializeMetadata(response: HttpResponse): Record<string, unknown>;
  };
  retryStrategy: () => Promise<unknown>;
  maxAttempts: () => Promise<number>;
}

interface Endpoint {
  readonly url: URL;
  readonly properties?: { authSchemes?: { signingRegion?: string; signingName?: string }[] };
  readonly headers?: Record<string, string[]>;
}

/** Where and how every direct request of a client goes: the same for all of them, so resolved once. */
interface Route {
  readonly endpoint: Endpoint;
  readonly protocol: string;
  readonly hostname: string;
  readonly port: number | undefined;
  readonly path: string;
  /** The endpoint's own headers and `host`, as the SDK's host-header middleware sets it. */
  readonly headers: Readonly<Record<string, string>>;
  readonly signingName: string;
  readonly signingRegion: string;
}

/** True when `value` holds bytes anywhere (a `B` or `BS` attribute): those go the SDK's way. */
export function holdsBytes(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (ArrayBuffer.isView(value)) return true;
  if (Array.isArray(value)) {
    for (const v of value) if (holdsBytes(v)) return true;
    return false;
  }
  for (const k in value) if (holdsBytes((value as Record<string, unknown>)[k])) return true;
  return false;
}

/**
 * True when a response body may hold a `B` or `BS` attribute value: then the client's protocol reads
 * it, so bytes come back as the SDK gives them. Inside a JSON string a quote is always escaped, so
 * `"B":` appears only as a key (an attribute named `B` just takes the SDK's way too).
 */
const MAY_HOLD_BYTES = /"BS?":/;

const utf8 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');

/** The direct path of one client. */
class DirectPath {
  private readonly config: ClientConfig;
  private readonly signer = new AwsSdkSigV4Signer();
  private resolved: Promise<Route> | undefined;
  private readonly handler: Handler;

  constructor(private readonly client: DynamoDBClient) {
    this.config = client.config as unknown as ClientConfig;
    // The SDK's retry middleware, composed once around one attempt: it reads only the retry
    // strategy, the attempts and the logger of the configuration, and nothing of the context.
    const retry = retryMiddleware(client.config as never) as unknown as (next: Handler, context: object) => Handler;
    this.handler = retry((args) => this.attempt(args), {});
  }

  /** The command's output, or undefined when the command is not one the direct path sends. */
  route(command: unknown): Promise<unknown> | undefined {
    const c = command as DirectCommand;
    if (!DIRECT.has((command as object).constructor)) return undefined;
    const input = c.input;
    const tables = typeof input.TableName === 'string' ? [input.TableName] : Object.keys((input.RequestItems as object | undefined) ?? {});
    if (tables.length === 0 || tables.some((t) => t.startsWith('arn:')) || holdsBytes(input)) return undefined;
    return this.send(c);
  }

  private async send(command: DirectCommand): Promise<unknown> {
    const route = await this.resolveRoute();
    const body = JSON.stringify(command.input);
    const request = new HttpRequest({
      method: 'POST',
      protocol: route.protocol,
      hostname: route.hostname,
      ...(route.port !== undefined ? { port: route.port } : {}),
      path: route.path,
      headers: {
        ...route.headers,
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': `DynamoDB_20120810.${command.schema[2]}`,
        'content-length': String(Buffer.byteLength(body)),
      },
      body,
    });
    const { output } = await this.handler({ input: command, request, route });
    return output;
  }

  /** The client's endpoint by the SDK's rules, and its signing name and region, once (a failure is not kept). */
  private resolveRoute(): Promise<Route> {
    this.resolved ??= this.routeOf().catch((err: unknown) => {
      this.resolved = undefined;
      throw err;
    });
    return this.resolved;
  }

  private async routeOf(): Promise<Route> {
    const endpoint = (await getEndpointFromInstructions({ TableName: 'tidemark' }, PutItemCommand, this.client.config as never)) as Endpoint;
    const { url } = endpoint;
    const scheme = endpoint.properties?.authSchemes?.[0];
    const headers: Record<string, string> = {};
    for (const [name, values] of Object.entries(endpoint.headers ?? {})) headers[name] = values.join(',');
    headers.host = url.host;
    return {
      endpoint,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port !== '' ? Number(url.port) : undefined,
      path: url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`,
      headers,
      signingName: scheme?.signingName ?? 'dynamodb',
      signingRegion: scheme?.signingRegion ?? (await this.config.region()),
    };
  }

  /** One attempt: sign (clock skew corrected), send, read. What `httpSigningMiddleware` and the deserializer do. */
  private async attempt({ input: command, request, route }: Attempt): Promise<{ response: HttpResponse; output: Output }> {
    const signingProperties = { config: this.config, context: { endpointV2: route.endpoint }, signingName: route.signingName, signingRegion: route.signingRegion };
    // The identity argument is unused: the client's signer reads its own (refreshing) credentials.
    const signed = (await this.signer.sign(request, {} as never, signingProperties)) as HttpRequest;
    try {
      const { response } = await this.config.requestHandler.handle(signed, {});
      if (response.statusCode >= 300) await this.deserialize(command, response);
      const bytes = await this.config.streamCollector(response.body);
      const text = utf8(bytes);
      let output: Output;
      if (MAY_HOLD_BYTES.test(text)) {
        response.body = bytes;
        output = (await this.deserialize(command, response)) as Output;
      } else {
        output = (text.length > 0 ? JSON.parse(text) : {}) as Output;
        output.$metadata = this.config.protocol.deserializeMetadata(response);
      }
      this.signer.successHandler(response, signingProperties);
      return { response, output };
    } catch (err) {
      return this.signer.errorHandler(signingProperties)(asError(err));
    }
  }

  /**
   * The response read by the client's protocol, as the SDK's deserializer middleware reads it: an
   * error response becomes the SDK's exception (and always throws), with the response riding on it,
   * hidden (the signer reads its Date for clock skew, the retry strategy its Retry-After).
   */
  private async deserialize(command: DirectCommand, response: HttpResponse): Promise<unknown> {
    const [, ns, name, traits, input, output] = command.schema;
    try {
      return await this.config.protocol.deserializeResponse(operation(ns, name, traits as never, input as never, output as never), this.config, response);
    } catch (err) {
      if (err && typeof err === 'object') {
        Object.defineProperty(err, '$response', { value: response, enumerable: false, writable: false, configurable: false });
        // A body the protocol cannot read (a 503 page from a load balancer) still carries its
        // status, so the retry strategy classifies it as the SDK does (a 5xx is retried).
        if (!('$metadata' in err)) Object.assign(err, { $metadata: this.config.protocol.deserializeMetadata(response) });
      }
      throw err;
    }
  }
}

/**
 * Sends the client's PutItem, UpdateItem, GetItem and BatchGetItem commands on the direct path;
 * everything else through the SDK's `send` as before. Returns the same client.
 */
export function directPath(client: DynamoDBClient): DynamoDBClient {
  const direct = new DirectPath(client);
  const sdkSend = client.send.bind(client) as (...args: unknown[]) => unknown;
  const send = (command: unknown, ...rest: unknown[]): unknown => (rest.length === 0 ? (direct.route(command) ?? sdkSend(command)) : sdkSend(command, ...rest));
  client.send = send as DynamoDBClient['send'];
  return client;
}
