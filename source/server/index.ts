export * from './auth.js';
export * from './log-tail.js';
export * from './openapi.js';
export * from './routes.js';
export * from './runner-routes.js';
export * from './server.js';
export * from './sse.js';
export * from './webhooks/index.js';
