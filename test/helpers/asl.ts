/** asl-validator (it ships no type declarations) behind a typed helper for the jobs tests. */
import { createRequire } from 'node:module';

interface AslResult {
  readonly isValid: boolean;
  readonly errors: readonly unknown[];
  errorsText(separator?: string): string;
}
type AslValidator = (definition: unknown, options?: { checkArn?: boolean; checkPaths?: boolean }) => AslResult;

const require = createRequire(import.meta.url);
const validator = require('asl-validator') as AslValidator | { default: AslValidator };
const validate: AslValidator = typeof validator === 'function' ? validator : validator.default;

/** Problems asl-validator finds in a definition (ARNs and paths checked); empty when valid. */
export function validateAsl(definition: unknown): string[] {
  const result = validate(definition, { checkArn: true, checkPaths: true });
  return result.isValid ? [] : result.errorsText('\n').split('\n');
}
