/**
 * The emulators that outlive a command: what `tidemark local up` and `npm start -- --keep` record
 * in `<dataDir>/local.json` (endpoints, PIDs, and the network namespace when they run in one of their
 * own), whether they are running and reachable from here, and stopping them by PID from anywhere.
 *
 *   const state = await localUp('.tidemark/local');        // starts them unless running; records them
 *   const status = await localStatus('.tidemark/local');   // { running, elsewhere, … }
 *   await localDown('.tidemark/local');                      // SIGTERM the recorded PIDs, then SIGKILL
 */
import { existsSync, mkdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TidemarkError } from '../../functions/core/errors.js';
import {
  answers,
  type EmulatorName,
  type Endpoints,
  isEmulatorProcess,
  killPids,
  LOCAL_DEFAULT_PORTS,
  NAMES,
  type PerEmulator,
  portInUse,
  type RunningEmulators,
  startEmulators,
} from './emulators.js';

/** What `localUp` (or `npm start -- --keep`) records in `<dataDir>/local.json`. */
export interface LocalState {
  endpoints: Endpoints;
  pids: PerEmulator<number>;
  startedAt: string;
  /** Set when they run in a network namespace of their own (`npm start` as root): its inode, `net:[4026532281]`. */
  netns?: string;
}

/** The state of the background emulators as `localStatus` sees it. */
export interface LocalStatus {
  /** True when every emulator recorded in local.json is alive and answering. */
  running: boolean;
  state: LocalState | null;
  services: PerEmulator<{ pid: number; alive: boolean; answering: boolean }> | null;
  /** True when they are alive in another network namespace, where their endpoints are not this one's 127.0.0.1. */
  elsewhere: boolean;
}

/** The network namespace of a process (`net:[4026532281]`), or null where /proc does not say. */
export function netnsOf(pid: number | 'self'): string | null {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return null;
  }
}

/** The command that runs `command` inside the network namespace of `pid` (as root). */
export const nsenterCommand = (pid: number, command: string): string => `nsenter --net=/proc/${pid}/ns/net -- ${command}`;

const statePath = (dataDir: string): string => join(dataDir, 'local.json');

function readState(dataDir: string): LocalState | null {
  try {
    return JSON.parse(readFileSync(statePath(dataDir), 'utf8')) as LocalState;
  } catch {
    return null;
  }
}

/** Liveness and an answering API call for each emulator recorded in `<dataDir>/local.json`. */
export async function localStatus(dataDir: string): Promise<LocalStatus> {
  const state = readState(dataDir);
  if (state === null) return { running: false, state: null, services: null, elsewhere: false };
  const own = netnsOf('self');
  const theirs = isEmulatorProcess(state.pids.dynamodb, 'dynamodb') ? netnsOf(state.pids.dynamodb) : null;
  if (own !== null && theirs !== null && own !== theirs) return { running: false, state, services: null, elsewhere: true };
  const entries = await Promise.all(
    NAMES.map(async (name) => {
      const pid = state.pids[name];
      const alive = isEmulatorProcess(pid, name);
      return [name, { pid, alive, answering: alive && (await answers(name, state.endpoints)) }] as const;
    }),
  );
  const services = Object.fromEntries(entries) as LocalStatus['services'] & object;
  return { running: NAMES.every((name) => services[name].answering), state, services, elsewhere: false };
}

/** Records running emulators in `<dataDir>/local.json`, for `local env`, `local down` and the CLI's clients. */
export function recordLocalState(dataDir: string, running: Pick<RunningEmulators, 'endpoints' | 'pids'>): LocalState {
  mkdirSync(dataDir, { recursive: true });
  const netns = process.env.TIDEMARK_NETNS === '1' ? netnsOf('self') : null;
  const state: LocalState = { endpoints: running.endpoints, pids: running.pids, startedAt: new Date().toISOString(), ...(netns ? { netns } : {}) };
  writeFileSync(statePath(dataDir), `${JSON.stringify(state, null, 2)}\n`);
  return state;
}

/**
 * Starts the three emulators in the background (detached, persistent under `dataDir`, ports 8000,
 * 4567 and 4569 unless overridden) and records them in `<dataDir>/local.json`. Idempotent: when
 * the recorded emulators are alive and answering, nothing is started (`alreadyRunning: true`).
 */
export async function localUp(
  dataDir: string,
  ports: Partial<PerEmulator<number>> = {},
  log: (line: string) => void = () => {},
): Promise<LocalState & { alreadyRunning: boolean }> {
  const status = await localStatus(dataDir);
  if (status.running && status.state !== null) return { ...status.state, alreadyRunning: true };
  if (status.elsewhere && status.state !== null) {
    throw new LocalEmulatorsElsewhereError(status.state, 'they are already running in another network namespace');
  }
  if (status.state !== null) await localDown(dataDir); // partly running or stale: start clean
  const wanted = { ...LOCAL_DEFAULT_PORTS, ...ports };
  for (const name of NAMES) {
    if (await portInUse(wanted[name])) throw new PortInUseError(name, wanted[name]);
  }
  const running = await startEmulators({ dataDir, ports: wanted, inMemory: false, detached: true, log });
  return { ...recordLocalState(dataDir, running), alreadyRunning: false };
}

/**
 * Stops the emulators recorded in `<dataDir>/local.json` by PID (only processes whose command line
 * is that emulator's) and removes the file. Returns false when nothing was recorded. Data is kept.
 */
export async function localDown(dataDir: string): Promise<boolean> {
  const state = readState(dataDir);
  if (state === null) return false;
  await killPids(NAMES.filter((name) => isEmulatorProcess(state.pids[name], name)).map((name) => state.pids[name]));
  if (existsSync(statePath(dataDir))) rmSync(statePath(dataDir));
  return true;
}

/** A port `localUp` was to listen on is taken. */
export class PortInUseError extends TidemarkError {
  constructor(
    readonly emulator: EmulatorName,
    readonly port: number,
  ) {
    super(`port ${port} (${emulator}) is already in use`);
    this.name = 'PortInUseError';
  }
}

/** The recorded emulators run in another network namespace: their 127.0.0.1 endpoints are not reachable from here. */
export class LocalEmulatorsElsewhereError extends Error {
  readonly state: LocalState;
  constructor(state: LocalState, what = 'the local emulators run in another network namespace') {
    super(`${what} (${state.netns ?? 'not this one'}): their endpoints ${state.endpoints.dynamodb}, … are not reachable from this shell`);
    this.name = 'LocalEmulatorsElsewhereError';
    this.state = state;
  }
}
