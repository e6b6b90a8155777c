export * from './checkout.js';
export * from './decide.js';
export * from './land.js';
export * from './merge.js';
export * from './queue.js';
export * from './remote.js';
