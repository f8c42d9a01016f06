/**
 * `tidemark`: runs one command and turns every failure into what was wrong and the fix
 * (bin/cli/errors.ts). The exit codes are the contract of docs/operations.md:
 *
 *   0  done
 *   1  the command ran and found something: reconcile findings, rejected lines under --strict,
 *      no row for `get`
 *   2  it could not run: a bad option or input, an AWS or connection error
 *
 * A closed pipe (`tidemark scan … | head -3`) ends the command quietly, as Unix tools do.
 * Commands load lazily (program.ts): `tidemark --help` loads commander and these few files.
 *
 *   tidemark get -t public.orders -k '{"order_id": 7}' --verbose    (a failure also prints its stack)
 */
import { CommanderError } from 'commander';
import { errorLines, exitCodeOf } from './errors.js';
import { program } from './program.js';

/** The `-c/--config` value of an argument list, for the fixes errors print. */
export function configPathOf(argv: readonly string[]): string {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if ((a === '-c' || a === '--config') && argv[i + 1] !== undefined) return argv[i + 1] as string;
    if (a.startsWith('--config=')) return a.slice('--config='.length);
  }
  return 'tidemark.config.json';
}

/** Ends the process quietly when the reader of stdout goes away (EPIPE); other stream errors still fail. */
function quietOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE') throw e;
      if (stream === process.stdout) process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    });
  }
}

/** Runs the command line; resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  quietOnClosedPipe();
  const verbose = argv.includes('--verbose');
  try {
    await program().parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    // Commander has printed its own message (unknown option, bad value) or the help.
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    for (const line of errorLines(e, { configPath: configPathOf(argv) }, verbose)) process.stderr.write(`${line}\n`);
    return exitCodeOf(e);
  }
}
