export * from './paths.js';
export * from './config.js';
export * from './resolve.js';
//# sourceMappingURL=index.js.map