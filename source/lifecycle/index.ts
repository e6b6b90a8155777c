export * from './init.js';
export * from './genesis.js';
export * from './which.js';
export * from './dashboard-invocations.js';
export * from './adopt.js';
export * from './runtime-ignore.js';
