// Preload (`node --require`) forcing every net.Server.listen() onto 127.0.0.1, for local emulators
// (kinesalite, s3rver) that bind all interfaces and have no host option. Unix sockets are untouched.
'use strict';
const net = require('node:net');
const LOOPBACK = '127.0.0.1';
const original = net.Server.prototype.listen;

net.Server.prototype.listen = function listen(...args) {
  const [first] = args;
  if (first !== null && typeof first === 'object' && !Array.isArray(first)) {
    // listen({ port, host, ... }[, cb]); a handle or { path } is left alone
    if (first.path === undefined && first._handle === undefined && first.fd === undefined) {
      args[0] = { ...first, host: LOOPBACK };
    }
  } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first)) || first === undefined || typeof first === 'function') {
    // listen(), listen(cb), listen(port), listen(port, cb), listen(port, host, ...), listen(port, backlog, cb)
    const port = typeof first === 'function' || first === undefined ? 0 : first;
    const rest = typeof first === 'function' ? args : args.slice(1);
    if (typeof rest[0] === 'string' || rest[0] === null || rest[0] === undefined && rest.length > 0) rest.shift();
    args = [port, LOOPBACK, ...rest];
  }
  return original.apply(this, args);
};
