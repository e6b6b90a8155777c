// The load hook of record-modules.mjs: posts each loaded module's URL.
let port;

export function initialize(data) {
  port = data.port;
}

export async function load(url, context, next) {
  port.postMessage(url);
  return next(url, context);
}
