export * from './store.js';
export * from './sign.js';
export * from './worker.js';
export * from './delivery.js';
