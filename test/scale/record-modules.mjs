// `node --import ./record-modules.mjs …`: writes every module URL the process
// loads (ESM, through a module.register load hook) to $PAK2_LOADED_OUT at exit.
import fs from 'node:fs';
import { createRequire, register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const { port1, port2 } = new MessageChannel();
const urls = [];
port1.on('message', (url) => urls.push(url));
port1.unref();
register('./record-hooks.mjs', { parentURL: import.meta.url, data: { port: port2 }, transferList: [port2] });
process.on('exit', () => {
  // Modules the CommonJS loader took (require) are listed too.
  const cjs = Object.keys(createRequire(import.meta.url).cache).map((file) => `file://${file}`);
  fs.writeFileSync(process.env.PAK2_LOADED_OUT, `${[...urls, ...cjs].join('\n')}\n`);
});
