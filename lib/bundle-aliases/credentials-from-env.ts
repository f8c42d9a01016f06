/**
 * Replaces `@aws-sdk/credential-provider-node` in Lambda bundles only (an esbuild alias, see
 * handler-asset.ts). Lambda always hands a function its role's credentials in the environment
 * (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), so the default chain's SSO,
 * INI, process, web-identity and IMDS providers (and the STS/SSO clients they carry) are dead
 * weight at cold start. The CLI and tests keep the full chain.
 */
import { fromEnv } from '@aws-sdk/credential-provider-env';

export const defaultProvider = (init?: Parameters<typeof fromEnv>[0]) => fromEnv(init);
