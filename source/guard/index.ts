export * from './env.js';
export * from '../redact.js';
export * from './routing.js';
export * from './run-guard.js';
export * from './scope.js';
export * from './tree.js';
export * from './verify.js';
export * from './read.js';
