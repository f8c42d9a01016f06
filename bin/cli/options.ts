/**
 * The options several commands share, and parsers that check a value and its range while the
 * command line is read, before anything starts. Light on purpose (commander only): program.ts loads
 * it for `--help`.
 *
 *   --batch-size 0   → option '--batch-size <n>' argument '0' is invalid. must be an integer from 1 to 10000
 */
import { InvalidArgumentError, Option } from 'commander';

/** A commander parser for an integer option within [min, max]. */
export const intIn =
  (min: number, max: number) =>
  (value: string): number => {
    const n = Number(value.trim() === '' ? Number.NaN : value);
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return n;
  };

/** An action that loads its command module when it runs, and calls one of its exports with the options. */
export const lazy =
  <M, O>(load: () => Promise<M>, pick: (m: M) => (options: O) => Promise<void> | void) =>
  async (options: O): Promise<void> => {
    await pick(await load())(options);
  };

export const configOption = () => new Option('-c, --config <file>', 'pipeline config').default('tidemark.config.json');
export const jsonOption = () => new Option('--json', 'print JSON Lines for machines, ending with {"summary":{…}} (docs/operations.md)');
export const shapeOption = () =>
  new Option('--input-shape <shape>', 'value: one message per line; record: {key, value, topic}').choices(['value', 'record']).default('value');
