export * from './types.js';
export * from './stream-lines.js';
export * from './tail.js';
export * from './load.js';
export * from './source.js';
export * from './budget.js';
export * from './attention.js';
export * from './tend.js';
