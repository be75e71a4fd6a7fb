// Node preload that makes every TCP server of the process listen on 127.0.0.1 only.
//
//     node --require tests/servers/loopback.cjs index.js streamableHttp
//
// server-everything (and Express's app.listen behind it) binds every interface and has
// no host option. This patches net.Server.prototype.listen (which http.Server inherits)
// so that each form that names a TCP port binds host 127.0.0.1, whatever host was asked:
//
//   listen()  listen(cb)  listen(port[, host][, backlog][, cb])  listen(options[, cb])
//
// Unix sockets / named pipes (listen(path), {path}) and inherited handles ({fd},
// {handle}, a handle object) are passed through untouched: they are not TCP.

'use strict';

const net = require('net');

const HOST = '127.0.0.1';
const originalListen = net.Server.prototype.listen;

function isPort(value) {
  return (
    typeof value === 'number' ||
    (typeof value === 'string' && value.trim() !== '' && Number.isInteger(Number(value)))
  );
}

function loopbackListen(...args) {
  const first = args[0];

  if (first !== null && typeof first === 'object') {
    // listen(options[, cb]), or listen(handle[, backlog][, cb]).
    const isTcpOptions =
      !('path' in first) && !('fd' in first) && !('handle' in first) && !('_handle' in first);
    if (isTcpOptions) {
      const options = { ...first, host: HOST };
      delete options.ipv6Only; // meaningless on an IPv4 address
      args[0] = options;
    }
    return originalListen.apply(this, args);
  }

  if (first === undefined || first === null || typeof first === 'function' || isPort(first)) {
    // listen([port][, host][, backlog][, cb]): rebuild it as the options form.
    const callback = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
    const port = typeof first === 'function' || first == null ? 0 : first;
    const rest = args.slice(1);
    if (typeof rest[0] === 'string' || rest[0] === null || rest[0] === undefined) {
      rest.shift(); // the host we override
    }
    const options = { port, host: HOST };
    if (typeof rest[0] === 'number') {
      options.backlog = rest[0];
    }
    return callback === undefined
      ? originalListen.call(this, options)
      : originalListen.call(this, options, callback);
  }

  // listen(path[, backlog][, cb]): a Unix socket or a named pipe.
  return originalListen.apply(this, args);
}

net.Server.prototype.listen = loopbackListen;
