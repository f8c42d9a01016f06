/**
 * Which service, operation and resource an AWS SDK call that failed was about, kept on the error
 * itself so the CLI can name them ("DynamoDB table shop-orders does not exist (GetItem)"). The
 * clients of bin/local/clients.ts carry it; `annotateErrors` works on any SDK v3 client:
 *
 *   const sfn = annotateErrors(new SFNClient({}), 'SFN', undefined);
 *   try { await sfn.send(cmd) } catch (e) { errorContextOf(e) }   // { service: 'SFN', operation: 'StartExecution', … }
 */
/** What a failed SDK call was: the service, the operation, the resource it named, the endpoint. */
export interface CallContext {
  readonly service: string;
  readonly operation: string;
  readonly resource?: string;
  readonly endpoint?: string;
}

const CALL_CONTEXT = Symbol.for('tidemark.callContext');

/** The resource an operation's input names (a table, bucket, stream, state machine, queue). */
function resourceOf(input: unknown): string | undefined {
  if (input === null || typeof input !== 'object') return undefined;
  const i = input as Record<string, unknown>;
  for (const field of ['TableName', 'Bucket', 'StreamName', 'StreamARN', 'stateMachineArn', 'executionArn', 'QueueUrl', 'SecretId']) {
    if (typeof i[field] === 'string') return i[field] as string;
  }
  const items = i.RequestItems;
  return items !== null && typeof items === 'object' ? Object.keys(items).join(', ') : undefined;
}

/** A client whose middleware stack takes one more step (any SDK v3 client). */
interface WithMiddleware {
  readonly middlewareStack: { add(middleware: never, options: never): void };
}
type Next = (args: { input: unknown }) => Promise<unknown>;

/**
 * Adds an `initialize` middleware that records, on any error the call ends with (after retries),
 * which service, operation and resource it was, so the CLI can name them (bin/cli/errors.ts).
 * Public surface only: `middlewareStack.add`, nothing removed or replaced.
 */
export function annotateErrors<C extends WithMiddleware>(client: C, service: string, endpoint: string | undefined): C {
  const middleware = (next: Next, context: { commandName?: string }) => async (args: { input: unknown }) => {
    try {
      return await next(args);
    } catch (err) {
      if (err !== null && typeof err === 'object' && !(CALL_CONTEXT in err)) {
        const name = context.commandName ?? 'call';
        const operation = name.endsWith('Command') ? name.slice(0, -'Command'.length) : name;
        const call: CallContext = { service, operation, ...withDefined('resource', resourceOf(args.input)), ...withDefined('endpoint', endpoint) };
        Object.defineProperty(err, CALL_CONTEXT, { value: call, enumerable: false });
      }
      throw err;
    }
  };
  client.middlewareStack.add(middleware as never, { step: 'initialize', name: 'tidemarkCallContext', override: true } as never);
  return client;
}

const withDefined = <K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> => (value === undefined ? {} : ({ [key]: value } as Record<K, string>));

/** The call context `annotateErrors` recorded on an error, if any. */
export function errorContextOf(err: unknown): CallContext | undefined {
  if (err === null || typeof err !== 'object' || !(CALL_CONTEXT in err)) return undefined;
  return (err as { [CALL_CONTEXT]: CallContext })[CALL_CONTEXT];
}
