export * from './init.js';
export * from './genesis.js';
export * from './which.js';
export * from './dashboard-invocations.js';
//# sourceMappingURL=index.js.map