/**
 * Per-shard checkpoints of `tidemark run`, kept so a restart resumes.
 *
 * Writes are atomic: the new content goes to a temporary file that is flushed and renamed over the
 * checkpoint, after the current checkpoint was kept as `<file>.prev`. A reader therefore sees a
 * whole old or a whole new file. A torn or empty checkpoint (written by something else, or a
 * full disk) is not fatal: the previous one is used, else every shard starts from the trim horizon.
 * Either way some records are applied again, which the position guard makes a no-op.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export type Checkpoints = Record<string, string>;

function parse(path: string): Checkpoints | null {
  if (!existsSync(path)) return null;
  try {
    const value: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
    const entries = Object.entries(value as Record<string, unknown>);
    return entries.every(([, v]) => typeof v === 'string') ? (Object.fromEntries(entries) as Checkpoints) : null;
  } catch {
    return null;
  }
}

export class CheckpointFile {
  constructor(
    readonly path: string,
    private readonly warn: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {
    mkdirSync(dirname(path), { recursive: true });
  }

  /** The last whole checkpoint: the file, else its previous version, else none. */
  load(): Checkpoints {
    const current = parse(this.path);
    if (current) return current;
    const previous = parse(`${this.path}.prev`);
    if (existsSync(this.path)) {
      this.warn('checkpoint file is torn or empty; resuming from the previous checkpoint or the trim horizon', { file: this.path, previous: previous !== null });
    }
    return previous ?? {};
  }

  save(checkpoints: Checkpoints): void {
    const tmp = `${this.path}.tmp`;
    const fd = openSync(tmp, 'w');
    try {
      writeSync(fd, JSON.stringify(checkpoints, null, 2));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (parse(this.path)) renameSync(this.path, `${this.path}.prev`);
    renameSync(tmp, this.path);
  }
}
