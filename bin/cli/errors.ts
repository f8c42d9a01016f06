/**
 * Every CLI failure as one or two lines: what was wrong (the option, table, service or file) and
 * the command that fixes it. The AWS and connection errors people hit most are recognized here:
 *
 *   not provisioned   tidemark: DynamoDB table shop-orders does not exist (GetItem)
 *                       fix: npx tidemark provision -c tidemark.config.json
 *   emulators down    tidemark: cannot reach DynamoDB at http://127.0.0.1:8000 (connection refused)
 *                       fix: npx tidemark local up, then eval "$(npx tidemark local env)"
 *   no region         tidemark: no AWS region is set
 *   no credentials    tidemark: no AWS credentials were found
 *   access denied     tidemark: access denied: S3 PutObject on shop-raw
 *   throttled         tidemark: DynamoDB throttled BatchWriteItem after 7 attempts
 *
 * The service, operation and resource come from the context `annotateErrors` (bin/local/clients.ts)
 * attaches to SDK errors. `--verbose` adds the stack.
 */
import { ConfigError, errorMessage, TidemarkError } from '../../functions/core/errors.js';
import { errorContextOf } from '../local/call-context.js';

/** A failure the CLI understood: its message, the fix, and the exit code (2 unless said). */
export class CliError extends TidemarkError {
  readonly fix: string | undefined;
  readonly exitCode: number;
  constructor(message: string, fix?: string, options?: ErrorOptions & { exitCode?: number }) {
    super(message, options);
    this.name = 'CliError';
    this.fix = fix;
    this.exitCode = options?.exitCode ?? 2;
  }
}

/** What the user sees of a failure. */
export interface Explained {
  readonly message: string;
  readonly fix?: string | undefined;
}

/** Where the CLI was pointed, for the fixes: the config file and whether the endpoints are local. */
export interface ErrorSetting {
  readonly configPath: string;
}

const LOCAL_FIX = 'npx tidemark local up, then eval "$(npx tidemark local env)"';
const NOT_FOUND = new Set(['ResourceNotFoundException', 'NoSuchBucket', 'NotFound', 'TableNotFoundException', 'StateMachineDoesNotExist']);
const DENIED = new Set(['AccessDeniedException', 'AccessDenied', 'UnauthorizedOperation', 'AuthorizationErrorException', 'Forbidden']);
const BAD_CREDENTIALS = new Set(['UnrecognizedClientException', 'InvalidAccessKeyId', 'InvalidClientTokenId', 'SignatureDoesNotMatch', 'InvalidSignatureException']);
const EXPIRED = new Set(['ExpiredToken', 'ExpiredTokenException', 'TokenRefreshRequired']);
const THROTTLED = new Set(['ThrottlingException', 'Throttling', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded', 'SlowDown', 'TooManyRequestsException', 'LimitExceededException', 'RequestThrottled']);
const CONNECTION: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed',
  ETIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  TimeoutError: 'timed out',
};

const nameOf = (e: unknown): string => (e instanceof Error ? e.name : '');
const codeOf = (e: unknown): string => {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
};
const isLoopback = (endpoint: string | undefined): boolean => endpoint !== undefined && (endpoint.includes('://127.') || endpoint.includes('://localhost') || endpoint.includes('://[::1]'));

const KINDS: Readonly<Record<string, string>> = { DynamoDB: 'table', S3: 'bucket', Kinesis: 'stream', SFN: 'state machine' };

function notProvisioned(e: unknown, s: ErrorSetting): Explained {
  const c = errorContextOf(e);
  const service = c?.service ?? 'AWS';
  const what = c?.resource ? `${service} ${KINDS[service] ?? 'resource'} ${c.resource}` : `a ${service} resource of the pipeline`;
  const fix = isLoopback(c?.endpoint) ? `npx tidemark provision -c ${s.configPath}` : `deploy the stack (npx cdk deploy -c tidemark:configFile=${s.configPath}), or check AWS_REGION`;
  return { message: `${what} does not exist${c?.operation ? ` (${c.operation})` : ''}`, fix };
}

function unreachable(e: unknown, how: string): Explained {
  const c = errorContextOf(e);
  const where = c?.endpoint ?? 'its endpoint';
  const local = isLoopback(c?.endpoint);
  return {
    message: `cannot reach ${c?.service ?? 'the AWS service'} at ${where} (${how})`,
    fix: local ? `the local emulators are not running there: ${LOCAL_FIX}` : 'check the network, AWS_REGION and any AWS_ENDPOINT_URL_* variable',
  };
}

/** `DynamoDB GetItem on shop-orders`, or `the call`. */
const callText = (e: unknown): string => {
  const c = errorContextOf(e);
  return c ? `${c.service} ${c.operation}${c.resource ? ` on ${c.resource}` : ''}` : 'the call';
};

function denied(e: unknown): Explained {
  const c = errorContextOf(e);
  const action = c ? `${c.service === 'SFN' ? 'states' : c.service.toLowerCase()}:${c.operation}` : 'the action';
  return { message: `access denied: ${callText(e)}`, fix: `use credentials allowed ${action}${c?.resource ? ` on ${c.resource}` : ''} (docs/deploy.md lists what each role may do)` };
}

function throttled(e: unknown): Explained {
  const c = errorContextOf(e);
  const attempts = (e as { $metadata?: { attempts?: number } }).$metadata?.attempts;
  return { message: `${c?.service ?? 'AWS'} throttled ${c?.operation ?? 'the call'}${attempts ? ` after ${attempts} attempts` : ''}`, fix: 'run it again in a minute; for long runs raise apply.maxRetries in the config' };
}

/** Errors known by name: the explanation of each. */
function byName(e: unknown, name: string): Explained | null {
  if (EXPIRED.has(name)) return { message: `the AWS credentials have expired (${callText(e)})`, fix: 'refresh them (aws sso login, or new keys) and run the command again' };
  if (BAD_CREDENTIALS.has(name)) return { message: `the AWS credentials were refused (${name}: ${callText(e)})`, fix: 'check AWS_PROFILE / AWS_ACCESS_KEY_ID; against the local emulators the keys are S3RVER/S3RVER' };
  if (DENIED.has(name)) return denied(e);
  if (THROTTLED.has(name)) return throttled(e);
  return null;
}

/** The AWS SDK's and the network's errors; null for anything else. */
function explainAws(e: unknown, s: ErrorSetting): Explained | null {
  const name = nameOf(e);
  const message = errorMessage(e);
  if (NOT_FOUND.has(name) || message.includes('non-existent table')) return notProvisioned(e, s);
  const how = CONNECTION[codeOf(e)] ?? CONNECTION[name];
  if (how !== undefined) return unreachable(e, how);
  if (message === 'Region is missing') return { message: 'no AWS region is set', fix: `export AWS_REGION=<region>; for the local emulators: ${LOCAL_FIX}` };
  if (name === 'CredentialsProviderError' || message.startsWith('Could not load credentials')) {
    return { message: 'no AWS credentials were found', fix: `aws configure (or export AWS_PROFILE=<profile>); for the local emulators: ${LOCAL_FIX}` };
  }
  return byName(e, name);
}

/** Turns anything thrown into what the user reads. */
export function explain(e: unknown, s: ErrorSetting): Explained {
  if (e instanceof CliError) return { message: e.message, fix: e.fix };
  if (e instanceof Error && e.name === 'EraseSecretError') {
    // The ledger-key hint (bin/cli/ledger-key.ts): the problem, then where to get the key.
    const [first, ...rest] = e.message.split('\n');
    return { message: first ?? e.message, fix: rest.map((l) => l.trim()).join('\n  ') || undefined };
  }
  if (e instanceof ConfigError) return { message: e.message, fix: 'fix the fields listed above; every problem is listed at once' };
  const aws = explainAws(e, s);
  if (aws) return aws;
  const cause = e instanceof Error ? e.cause : undefined;
  if (cause !== undefined && cause !== e) {
    const inner = explainAws(cause, s);
    if (inner) return inner;
  }
  return { message: errorMessage(e) };
}

/** The lines printed for a failure: `tidemark: <message>`, `  fix: <command>`, and the stack with --verbose. */
export function errorLines(e: unknown, s: ErrorSetting, verbose: boolean): string[] {
  const x = explain(e, s);
  const lines = [`tidemark: ${x.message}`];
  if (x.fix) lines.push(`  fix: ${x.fix}`);
  if (verbose && e instanceof Error && e.stack) lines.push(e.stack);
  else if (!x.fix && !(e instanceof TidemarkError)) lines.push('  (run again with --verbose for the stack)');
  return lines;
}

/** The exit code of a failure: a CliError's own, else 2 (the command could not run). */
export const exitCodeOf = (e: unknown): number => (e instanceof CliError ? e.exitCode : 2);
