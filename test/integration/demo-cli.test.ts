/**
 * `npm start -- --keep` (defect 3): the kept emulators are reachable by the commands the demo
 * prints, and `tidemark local down` stops them from outside. In a network namespace of their own
 * (root, as `npm start` runs them), a command from another namespace gets the exact `nsenter`
 * command instead of ECONNREFUSED, and that command works.
 * Run with `node bin/with-loopback.mjs node --import tsx --test test/integration/demo-cli.test.ts`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isAlive } from '../../bin/local/emulators.js';
import { type LocalState, netnsOf } from '../../bin/local/local-state.js';
import { CLI } from '../helpers/cli-env.js';

const dir = mkdtempSync(join(tmpdir(), 'tidemark-demo-'));
const statePath = join(dir, '.tidemark', 'local', 'local.json');
const canUnshare = typeof process.getuid === 'function' && process.getuid() === 0 && spawnSync('unshare', ['--version']).status === 0;

const run = (cmd: string, args: readonly string[]) => spawnSync(cmd, args, { cwd: dir, encoding: 'utf8', timeout: 300_000, env: { ...process.env, TIDEMARK_ERASE_KEY: '' } });

after(() => {
  // Stop anything left by a failed assertion, by the recorded PIDs only.
  run(process.execPath, [CLI, 'local', 'down']);
  rmSync(dir, { recursive: true, force: true });
});

describe('npm start -- --keep', () => {
  it('keeps the emulators where the printed commands reach them, and local down stops them from outside', () => {
    const demo = run(process.execPath, [CLI, 'demo', '--keep']);
    assert.equal(demo.status, 0, demo.stderr);
    assert.match(demo.stdout, /current state matches the source database exactly\./);
    const state = JSON.parse(readFileSync(statePath, 'utf8')) as LocalState;
    const pids = Object.values(state.pids);
    assert.ok(pids.every(isAlive), 'the emulators are still running');
    const config = '.tidemark/demo/tidemark.config.json';
    assert.ok(demo.stdout.includes(`npx tidemark status -c ${config}`), demo.stdout);
    assert.match(demo.stdout, /stop them, from any shell: npx tidemark local down/);

    // From where the demo ran, the printed command works.
    const status = run(process.execPath, [CLI, 'status', '-c', config]);
    assert.equal(status.status, 0, status.stderr);
    assert.match(status.stdout, /public\.orders\s+RUNNING\s+streaming/);

    if (process.env.TIDEMARK_NETNS === '1' && canUnshare) {
      assert.equal(state.netns, netnsOf('self'), 'recorded in their namespace');
      assert.ok(demo.stdout.includes(`nsenter --net=/proc/${state.pids.dynamodb}/ns/net -- npx tidemark status -c ${config}`), demo.stdout);
      // From another network namespace: the exact command that enters theirs, and it works.
      const outside = run('unshare', ['-n', '--', process.execPath, CLI, 'status', '-c', config]);
      assert.equal(outside.status, 2);
      assert.match(outside.stderr, /^tidemark: the local emulators run in another network namespace/);
      assert.ok(outside.stderr.includes(`fix: run it in their namespace: nsenter --net=/proc/${state.pids.dynamodb}/ns/net -- npx tidemark status -c ${config}`), outside.stderr);
      const entered = run('unshare', ['-n', '--', 'nsenter', `--net=/proc/${state.pids.dynamodb}/ns/net`, '--', process.execPath, CLI, 'status', '-c', config]);
      assert.equal(entered.status, 0, entered.stderr);
      const down = run('unshare', ['-n', '--', process.execPath, CLI, 'local', 'down']);
      assert.equal(down.status, 0, down.stderr);
    } else {
      assert.match(demo.stdout, /emulators left running on 127\.0\.0\.1/);
      assert.equal(run(process.execPath, [CLI, 'local', 'down']).status, 0);
    }
    assert.ok(!pids.some(isAlive), 'local down stopped every emulator');
  });
});
