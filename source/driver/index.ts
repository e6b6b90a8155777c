export * from './launch.js';
export * from './prompt.js';
export * from './pricing.js';
export * from './dispatch.js';
export * from './plugins/index.js';
export * from './process-tree.js';
export * from './spend.js';
export * from './acceptance.js';
