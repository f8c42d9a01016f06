/**
 * An SDK request handler that records every signed request and answers like DynamoDB's HTTP
 * endpoint, and an independent SigV4 check of what it recorded: for tests of how a client puts
 * requests on the wire (the lean clients, the direct path). test/helpers/fake-dynamodb.ts is the
 * other kind of fake: a DynamoDB that evaluates commands, one level above the wire.
 */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { Sha256 } from '@smithy/core/checksum';
import { HttpRequest, HttpResponse } from '@smithy/core/protocols';
import { SignatureV4 } from '@smithy/signature-v4';

export interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers?: Record<string, string>;
}

/**
 * A request handler that records each (signed) request and answers with `answer(request, n)`
 * (n counts from 1), after 0–2 ms so concurrent requests finish out of order.
 */
export function recordingHandler(answer: (req: HttpRequest, n: number) => Answer) {
  const requests: HttpRequest[] = [];
  return {
    requests,
    handler: {
      handle: async (req: HttpRequest) => {
        requests.push(req);
        const n = requests.length;
        await new Promise((r) => setTimeout(r, n % 3));
        const a = answer(req, n);
        const headers = { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': `req-${n}`, ...a.headers };
        return { response: new HttpResponse({ statusCode: a.status, headers, body: Readable.from([Buffer.from(a.body)]) }) };
      },
    },
  };
}

/** A request body as text (the SDK hands the handler bytes or a string). */
export const bodyText = (body: unknown): string => (body instanceof Uint8Array ? Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8') : String(body));

/** Signs a copy of `req` (without its Authorization) at the same instant, independently of any SDK client. */
export async function resign(req: HttpRequest, credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string }, region: string): Promise<string | undefined> {
  const { authorization: _dropped, ...headers } = req.headers;
  const m = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/.exec(req.headers['x-amz-date'] ?? '');
  assert.ok(m, 'x-amz-date set');
  const signingDate = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])));
  const signer = new SignatureV4({ credentials, region, service: 'dynamodb', sha256: Sha256, uriEscapePath: true });
  return ((await signer.sign(new HttpRequest({ ...req, headers }), { signingDate })) as HttpRequest).headers.authorization;
}

/** The error `promise` rejects with; fails the test when it resolves. */
export const rejectionOf = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => assert.fail('must fail'),
    (err: unknown) => err,
  );
