/**
 * The local commands: `local up|env|down`, `provision` and `demo`. The emulators are dev
 * dependencies: without them, `local up` and `demo` say what to install. `local down` stops what
 * `local up` or `npm start -- --keep` recorded in `.tidemark/local/local.json`, by PID, from any
 * network namespace.
 *
 *   tidemark local up --dynamodb-port 8100     (a taken port is named, with the option to move it)
 *   tidemark provision                          (each resource once; progress on a terminal)
 */
import type { PerEmulator } from '../../local/emulators.js';
import { envExports } from '../../local/emulators.js';
import { LocalEmulatorsElsewhereError, localDown, localStatus, localUp, nsenterCommand, PortInUseError } from '../../local/local-state.js';
import { provision } from '../../local/provision.js';
import { clients, config as loadConfig, LOCAL_DIR } from '../context.js';
import { EMULATOR_PACKAGES, requirePackages } from '../dev-packages.js';
import { CliError } from '../errors.js';
import { err, out, progress, renderTable, summaryLine } from '../output.js';

const LOCAL_ALTERNATIVE = 'point AWS_ENDPOINT_URL_DYNAMODB, _KINESIS and _S3 at emulators of your own';

interface LocalUpOptions {
  readonly dynamodbPort?: number;
  readonly kinesisPort?: number;
  readonly s3Port?: number;
}

/** A CliError for emulators recorded in another network namespace: the command that enters it. */
function elsewhere(e: LocalEmulatorsElsewhereError, command: string): CliError {
  return new CliError(e.message, `${nsenterCommand(e.state.pids.dynamodb, command)}   (or stop them: npx tidemark local down)`);
}

export async function localUpCommand(o: LocalUpOptions): Promise<void> {
  requirePackages(EMULATOR_PACKAGES, 'tidemark local up', LOCAL_ALTERNATIVE);
  const ports: Partial<PerEmulator<number>> = {
    ...(o.dynamodbPort ? { dynamodb: o.dynamodbPort } : {}),
    ...(o.kinesisPort ? { kinesis: o.kinesisPort } : {}),
    ...(o.s3Port ? { s3: o.s3Port } : {}),
  };
  try {
    const state = await localUp(LOCAL_DIR, ports, (l) => err(l));
    err(state.alreadyRunning ? 'tidemark: local emulators already running' : 'tidemark: local emulators started (stop them with npx tidemark local down)');
    out(envExports(state.endpoints).trimEnd());
  } catch (e) {
    if (e instanceof LocalEmulatorsElsewhereError) throw elsewhere(e, 'npx tidemark local env');
    if (e instanceof PortInUseError) throw new CliError(`${e.message}: stop whatever listens there, or move the ${e.emulator} emulator`, `npx tidemark local up --${e.emulator}-port <a free port>`);
    throw e;
  }
}

export async function localEnvCommand(): Promise<void> {
  const status = await localStatus(LOCAL_DIR);
  if (status.elsewhere && status.state) throw elsewhere(new LocalEmulatorsElsewhereError(status.state), 'sh -c \'eval "$(npx tidemark local env)"; exec "$SHELL"\'');
  if (!status.running || !status.state) throw new CliError('the local emulators are not running', 'npx tidemark local up (or npm start -- --keep)');
  out(envExports(status.state.endpoints).trimEnd());
}

export async function localDownCommand(): Promise<void> {
  err((await localDown(LOCAL_DIR)) ? 'tidemark: local emulators stopped' : 'tidemark: no local emulators were recorded in .tidemark/local/ (nothing to stop)');
}

interface ProvisionOptions {
  readonly config: string;
  readonly json?: boolean;
}

export async function provisionCommand(o: ProvisionOptions): Promise<void> {
  const cfg = loadConfig(o.config);
  const resources = cfg.tables.length + 3;
  const bar = progress('provision', resources, 'resources', { quiet: o.json === true });
  let done = 0;
  const report = await provision(cfg, await clients(cfg), {
    log: (line) => {
      done++;
      bar.update(done, line);
    },
  });
  bar.stop();
  if (o.json) {
    for (const r of report.resources) out(JSON.stringify(r));
    out(summaryLine({ command: 'provision', stream: report.streamName, resources: report.resources.length, changed: report.changed }));
    return;
  }
  out(renderTable([{ header: 'kind' }, { header: 'name', flex: true }, { header: 'action' }, { header: 'detail', flex: true }], report.resources.map((r) => [r.kind, r.name, r.action, r.detail ?? ''])));
  out(report.changed ? 'provision: done' : 'provision: everything was already there');
}

export async function demoCommand(o: { readonly keep?: boolean }): Promise<void> {
  requirePackages(EMULATOR_PACKAGES, 'the demo', LOCAL_ALTERNATIVE);
  const { runDemo } = await import('../demo.js');
  await runDemo({ keep: o.keep === true });
}
