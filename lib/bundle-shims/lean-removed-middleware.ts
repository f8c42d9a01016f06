/**
 * Replaces the SDK's user-agent and logger middleware in Lambda bundles only (see
 * `BUNDLE_REPLACEMENTS` in handler-asset.ts). Every client of the Lambda runtime is built by
 * `createRuntimeClients` (functions/commons/clients.ts), whose `lean` removes both from the
 * middleware stack (`LEAN_REMOVALS`) before any request, so their code never runs (about 2.5 KB).
 * The stand-ins keep what runs at construction exactly: the plugins add a middleware under the
 * same name, step and options, so `lean` finds and removes it as before
 * (test/unit/cdk/bundle-shims.test.ts compares the options); the middleware itself fails loudly
 * if a client ever keeps it.
 */

const removed = (name: string) => () => async (): Promise<never> => {
  throw new Error(`the Lambda bundle carries no SDK ${name}: createRuntimeClients removes it from every client (LEAN_REMOVALS)`);
};

interface Stack {
  add(middleware: unknown, options: object): void;
}

export const getUserAgentMiddlewareOptions = {
  name: 'getUserAgentMiddleware',
  step: 'build',
  priority: 'low',
  tags: ['SET_USER_AGENT', 'USER_AGENT'],
  override: true,
};

export const userAgentMiddleware = (_options: unknown) => removed('user-agent middleware');

export const getUserAgentPlugin = (config: unknown) => ({
  applyToStack: (clientStack: Stack) => {
    clientStack.add(userAgentMiddleware(config), getUserAgentMiddlewareOptions);
  },
});

export const loggerMiddlewareOptions = {
  name: 'loggerMiddleware',
  tags: ['LOGGER'],
  step: 'initialize',
  override: true,
};

export const loggerMiddleware = () => removed('logger middleware');

export const getLoggerPlugin = (_options: unknown) => ({
  applyToStack: (clientStack: Stack) => {
    clientStack.add(loggerMiddleware(), loggerMiddlewareOptions);
  },
});
