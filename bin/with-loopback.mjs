#!/usr/bin/env node
// Runs a command inside a fresh network namespace with only loopback up (`unshare -n`), so servers
// that bind every interface (DynamoDB Local) stay private and tests are provably hermetic.
// Usage: node bin/with-loopback.mjs <cmd> [args...]. Falls back to running the command directly.
import { spawn, spawnSync } from 'node:child_process';

const [cmd, ...args] = process.argv.slice(2);
if (cmd === undefined) {
  process.stderr.write('usage: node bin/with-loopback.mjs <cmd> [args...]\n');
  process.exit(2);
}

function whyNotIsolated() {
  if (process.env.TIDEMARK_NETNS === '1') return null; // already inside the namespace: run directly, quietly
  if (process.platform !== 'linux') return `not Linux (${process.platform})`;
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return 'not running as root';
  if (spawnSync('unshare', ['--version'], { stdio: 'ignore' }).status !== 0) return '`unshare` is not available';
  return '';
}

const reason = whyNotIsolated();
let child;
if (reason === '') {
  const script = 'ip link set lo up && exec "$@"';
  child = spawn('unshare', ['-n', '--', 'sh', '-c', script, 'sh', cmd, ...args], {
    stdio: 'inherit',
    env: { ...process.env, TIDEMARK_NETNS: '1' },
  });
} else {
  if (reason !== null) process.stderr.write(`with-loopback: not isolating the network (${reason}); running the command directly\n`);
  child = spawn(cmd, args, { stdio: 'inherit' });
}

const forward = (signal) => {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward);

child.on('error', (err) => {
  process.stderr.write(`with-loopback: cannot run ${cmd}: ${err.message}\n`);
  process.exit(127);
});
child.on('exit', (code, signal) => {
  if (signal !== null) {
    for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
