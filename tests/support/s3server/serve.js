// The S3-compatible server of conveyor's tests: @20minutes/s3rver (it checks Signature Version 4, unlike
// s3rver 3.7.1, which checks only the access key), on an address and port of the test's choosing, with
// its buckets made and, when asked, a local folder's files put into a bucket before it says it listens.
// Its one account: access key S3RVER, secret S3RVER.
//   node serve.js --directory DIR [--address 127.0.0.1] [--port 0] [--bucket NAME]...
//                 [--upload FOLDER --into BUCKET/PREFIX]
// Prints "listening ADDRESS:PORT" once ready, then serves until killed.
'use strict';
// Debian 12's Node is 18 (conveyor.sh installs it where npm is missing); the server's router (@koa/router 15)
// calls Array.prototype.toReversed, which came with Node 20. This is that method as Node 20 defines it.
if (!Array.prototype.toReversed) {
  Object.defineProperty(Array.prototype, 'toReversed', {
    value: function toReversed() { return this.slice().reverse(); }, writable: true, configurable: true,
  });
}
const fs = require('fs');
const http = require('http');
const path = require('path');
const S3rver = require('@20minutes/s3rver');

const args = { address: '127.0.0.1', port: 0, buckets: [] };
for (let i = 2; i < process.argv.length; i += 2) {
  const [name, value] = [process.argv[i], process.argv[i + 1]];
  if (name === '--directory') args.directory = value;
  else if (name === '--address') args.address = value;
  else if (name === '--port') args.port = Number(value);
  else if (name === '--bucket') args.buckets.push(value);
  else if (name === '--upload') args.upload = value;
  else if (name === '--into') args.into = value;
  else { console.error(`serve.js: unknown option ${name}`); process.exit(2); }
}

// Every regular file under `folder`, relative to it, sorted.
function files(folder, under = '') {
  return fs.readdirSync(path.join(folder, under), { withFileTypes: true })
    .flatMap(e => e.isDirectory() ? files(folder, path.join(under, e.name)) : e.isFile() ? [path.join(under, e.name)] : [])
    .sort();
}

// An unsigned PUT (the server lets requests without credentials through; the readers under test sign).
function put(port, target, file) {
  return new Promise((resolve, reject) => {
    const body = fs.readFileSync(file);
    const request = http.request({ host: args.address, port, method: 'PUT', path: target,
                                   headers: { 'Content-Length': body.length } }, response => {
      response.resume();
      response.on('end', () => response.statusCode === 200 ? resolve() : reject(new Error(`PUT ${target}: ${response.statusCode}`)));
    });
    request.on('error', reject);
    request.end(body);
  });
}

async function main() {
  const server = new S3rver({ address: args.address, port: args.port, silent: true, directory: args.directory,
                              configureBuckets: args.buckets.map(name => ({ name })) });
  const { port } = await server.run();
  if (args.upload) {
    const [bucket, ...prefix] = args.into.split('/');
    for (const file of files(args.upload)) {
      const key = [...prefix.filter(p => p), ...file.split(path.sep)].map(encodeURIComponent).join('/');
      await put(port, `/${bucket}/${key}`, path.join(args.upload, file));
    }
  }
  console.log(`listening ${args.address}:${port}`);
}
main().catch(error => { console.error(error); process.exit(1); });
