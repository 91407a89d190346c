// A raw TCP client for tests of HTTP server limits: what a slow or idle client does that
// fetch cannot (send half the headers, hold a connection open).
import { connect, type Socket } from 'node:net';

export function openSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the server sends until it closes the socket. */
export function untilClosed(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk) => {
      text += String(chunk);
    });
    socket.on('error', () => {});
    socket.once('close', () => resolve(text));
  });
}

/** Sends GET `path` on an open keep-alive connection; resolves with the first chunk of the answer. */
export function getOn(socket: Socket, path: string): Promise<string> {
  const reply = new Promise<string>((resolve) => socket.once('data', (chunk) => resolve(String(chunk))));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  return reply;
}
